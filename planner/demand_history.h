// The recent intervals' offered prefill demand, for provisioning against
// bursts: a worker asked for now takes a cold start to arrive, so the
// workers there are must carry whatever comes in the next cold start. The
// `sla` policy provisions for a high quantile of the busiest interval of
// the next cold start, estimated from how busy the busiest interval of
// every window of that length was in the last minutes (an empirical
// envelope), not for the forecast mean: on bursty traffic (the Azure 2023
// code trace: a 10 s interval at 0 to 13x the hour's mean) the mean and a
// trend predictor lag every burst by a cold start.
#pragma once

#include <cstddef>
#include <deque>

namespace tandem::planner {

class DemandHistory {
 public:
  // remembers the last `capacity` intervals (at least 1).
  explicit DemandHistory(size_t capacity);

  // appends one interval's demand (any unit: the policy uses prefill
  // worker-seconds a second), forgetting the oldest beyond the capacity.
  void add(double demand);

  // over every run of `window` consecutive intervals held (at least one),
  // the largest demand of the run; returns the `quantile` (0..1, the
  // nearest rank above) of those maxima. With fewer than `window` intervals
  // held, their maximum. 0 when empty.
  double peakQuantile(size_t window, double quantile) const;

  // over every interval j held but the last, the most the demand rose
  // within the `window` intervals after it (max(d[j+1..j+window]) - d[j],
  // negative when it fell); returns their `quantile` (nearest rank above).
  // Only runs that end within the history count, unless none does. 0 with
  // fewer than two intervals.
  double riseQuantile(size_t window, double quantile) const;

  // the last interval's demand (0 when empty).
  double last() const { return demand_.empty() ? 0 : demand_.back(); }
  size_t size() const { return demand_.size(); }

 private:
  size_t capacity_;
  std::deque<double> demand_;
};

}  // namespace tandem::planner
