// `sla`: Dynamo's throughput planner, on tandem's profile. From the predicted
// request rate, ISL, OSL and cached fraction (the larger of predicted and
// observed rate: a forecast that lags a ramp does not shrink the cluster):
//  - prefill: each prompt's uncached tokens take prefill time at the
//    profile's throughput for its length (times the learned TTFT
//    correction); the prefill pool is an M/M/N queue (queue_model.h) and
//    gets the fewest workers whose wait at the target quantile fits in the
//    TTFT SLO left after the prefill itself;
//  - decode: the largest batch per worker whose ITL (profile, at the mean
//    decode context, times the learned ITL correction) stays within 90% of
//    the ITL SLO and whose KV fits the worker; the decode workers are the
//    requests in decode (Little: rate x OSL x ITL) over 80% of that batch,
//    and at least enough more for the requests observed waiting to join one.
// The corrections are observed / predicted mean latency (TTFT against the
// queue model's mean at the workers there were; ITL against the profile at
// the batch there was), smoothed and bounded to [0.5, 2] (none learned from an overloaded
// pool: requests waiting to join a decode batch, or prefill offered at
// or above its workers); means, because
// the TTFT quantiles of heavy-tailed prompt lengths say more about the
// longest prompts than about the queue. Up at once;
// down only after scale_down_after intervals in a row wanted fewer, by at
// most a fifth of the role at a time (never below what the sizing needs).
#pragma once

#include "planner/policies.h"
#include "planner/scaling_policy.h"

namespace tandem::planner {

class SlaPolicy : public ScalingPolicy {
 public:
  // `config.profile` must be set (makePolicy checks).
  explicit SlaPolicy(const PolicyConfig& config);

  // ScalingPolicy
  const char* name() const override { return "sla"; }
  ScalingDecision decide(const PolicyInputs& inputs) override;

  // the sizing alone (no hysteresis, no bounds), with the current
  // corrections: what `rate` requests/s of this shape need.
  RoleCounts size(double rate, double isl, double osl, double cached_fraction) const;
  double ttftCorrection() const { return ttft_correction_; }
  double itlCorrection() const { return itl_correction_; }

 private:
  void learn(const LoadSample& observed, const RoleCounts& current);
  double prefillServiceS(double isl, double cached_fraction) const;

  const PolicyConfig config_;
  const WorkerProfile& profile_;
  double ttft_correction_ = 1;
  double itl_correction_ = 1;
  RoleCounts down_streak_;
};

}  // namespace tandem::planner
