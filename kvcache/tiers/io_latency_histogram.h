// A lock-free latency histogram with fixed bucket bounds, for I/O latencies a
// Prometheus exporter turns into a histogram (it sums the buckets into its
// cumulative `le` series). Written from completion threads, read anywhere.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

namespace tandem::kvcache {

class IoLatencyHistogram {
 public:
  // upper bounds (inclusive) of the buckets, in microseconds; one more bucket
  // past the last bound counts everything slower.
  static constexpr std::array<int64_t, 14> kBoundsUs = {
      25, 50, 100, 250, 500, 1'000, 2'500, 5'000, 10'000, 25'000, 50'000, 100'000,
      250'000, 1'000'000};
  static constexpr size_t kBuckets = kBoundsUs.size() + 1;

  void record(int64_t micros) {
    size_t i = 0;
    while (i < kBoundsUs.size() && micros > kBoundsUs[i]) ++i;
    counts_[i].fetch_add(1, std::memory_order_relaxed);
    sum_us_.fetch_add(micros, std::memory_order_relaxed);
  }
  // samples in bucket i (not cumulative).
  int64_t bucket(size_t i) const { return counts_[i].load(std::memory_order_relaxed); }
  int64_t count() const {
    int64_t n = 0;
    for (const auto& c : counts_) n += c.load(std::memory_order_relaxed);
    return n;
  }
  int64_t sumMicros() const { return sum_us_.load(std::memory_order_relaxed); }

 private:
  std::array<std::atomic<int64_t>, kBuckets> counts_{};
  std::atomic<int64_t> sum_us_{0};
};

}  // namespace tandem::kvcache
