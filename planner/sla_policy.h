// `sla`: Dynamo's throughput planner, on tandem's profile. From the predicted
// request rate, ISL, OSL and cached fraction (the larger of predicted and
// observed rate: a forecast that lags a ramp does not shrink the cluster),
// or, where the source measures the prompt lengths (LoadSample::mix), from
// the predicted rate and the mix of the last minutes (a window forgetting
// over kMixWindowS: a 10 s interval holds too few of the long prompts):
//  - prefill with a mix: each range of prompt lengths is a class with its
//    own prefill time; the pool is M/G/N (queue_model.h) and gets the
//    fewest workers for which the share of prompts whose wait fits in what
//    their own prefill leaves of the TTFT SLO reaches the target (those
//    whose prefill alone exceeds the SLO cannot: see workersForAttainment);
//  - decode with a mix: the context and KV a batch holds weighted by how
//    long each request decodes (prompt x output over output), not the
//    mean prompt: long prompts with long answers fill the KV;
// without a mix:
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
// A prefill backlog whose share per worker would wait half the TTFT SLO
// adds the workers that clear it within the SLO (at most doubling the ready
// ones; once, counting those starting).
// The corrections are observed / predicted mean latency (TTFT against the
// queue model's mean at the workers there were; ITL against the profile at
// the batch there was), smoothed and bounded to [0.5, 2] (TTFT's to [1, 2]:
// a faster TTFT than modelled says the wait model is pessimistic, not that
// prefill beats the profile) (none learned from an overloaded
// pool: requests waiting to join a decode batch, or prefill offered at
// or above its workers); means, because
// the TTFT quantiles of heavy-tailed prompt lengths say more about the
// longest prompts than about the queue. Up at once;
// down only after scale_down_after intervals in a row wanted fewer, by at
// most a fifth of the role at a time (never below what the sizing needs).
#pragma once

#include <vector>

#include "planner/policies.h"
#include "planner/queue_model.h"
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
  // the sizing from a prompt-length mix (M/G/N per class, decode weighted
  // by decode time); the means model above when `mix` is empty.
  RoleCounts sizeForMix(double rate, const PromptMix& mix) const;
  // adds an interval's mix to the window decide() sizes with.
  void observeMix(const PromptMix& mix);
  const PromptMix& mix() const { return mix_; }
  // how long the mix window remembers (an interval's weight decays by
  // e^{-interval / kMixWindowS}).
  static constexpr double kMixWindowS = 300;
  double ttftCorrection() const { return ttft_correction_; }
  double itlCorrection() const { return itl_correction_; }

 private:
  void learn(const LoadSample& observed, const RoleCounts& current);
  double prefillServiceS(double isl, double cached_fraction) const;
  int decodeWorkers(double rate, double isl, double osl) const;
  // the mix's classes: share and prefill time (with the TTFT correction).
  std::vector<ServiceClass> classes(const PromptMix& mix) const;

  const PolicyConfig config_;
  const WorkerProfile& profile_;
  double ttft_correction_ = 1;
  double itl_correction_ = 1;
  RoleCounts down_streak_;
  PromptMix mix_;
};

}  // namespace tandem::planner
