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
// Against bursts (the variability of arrivals and prompt tokens), each
// signal drives one decision:
//  - the arrivals' interarrival scv within an interval (LoadSample::
//    arrival_scv, a window like the mix's) stretches the modelled wait
//    (G/G/N, queue_model.h): how many workers a given rate needs; prompt
//    tokens' variability is the mix's (M/G/N per class);
//  - the rate to size for (both roles) is the largest of the forecast,
//    the interval's, and the burst envelope (demand_history.h over each
//    interval's busiest-half rate, LoadSample::peak_request_rate, which a
//    burst's onset does not halve as the mean does): the last such rate
//    plus the burst_quantile of how much it rose within a cold start and
//    an interval over the last burst_window_s, less 3 standard deviations
//    of the rates' counting noise (a steady stream's rises; the arrival
//    scv scales it), at most the most it reached there. It sets the
//    scale-up target ahead of the bursts the traffic has shown, and holds
//    workers through lulls shorter than their recurrence;
//  - queued prefill work whose share per worker would wait half the TTFT
//    SLO and that grew since the last decision asks at once (past any
//    hysteresis) for the workers that served the interval (ready at its
//    start and end) plus what its growth says the arrivals needed beyond
//    them (an absolute count: those starting count towards it). Not more:
//    a queued prompt stays at the worker it was routed to, so workers
//    added serve only the prompts still to come;
//  - scale-down waits max(scale_down_after, a cold start + an interval)
//    intervals in a row of lower need (a worker stopped and asked for again
//    within a cold start costs more than one kept), none while requests
//    wait on the role (decode: as many waiting to join a batch as it has
//    workers; prefill: a queue of half the TTFT SLO a worker), and takes at
//    most a fifth of the role at a time (never below what the sizing needs).
// The corrections are observed / predicted mean latency (TTFT against the
// queue model's mean at the ready workers; ITL against the profile at the
// batch there was), smoothed and bounded to [0.5, 2] (TTFT's to [1, 2]: a
// faster TTFT than modelled says the wait model is pessimistic, not that
// prefill beats the profile). They learn only what they can fix: an
// interval that met its SLO pulls them towards 1 (ITL's may still learn a
// faster decode than the profile's; a correction above 1 there only buys
// workers the SLO does not need: on the shared traces it cost 20-40% more
// GPU-hours than the counts that meet it); TTFT's only where the modelled
// wait is a small part of the TTFT (it scales the prefill time, not the
// queue) and no prefill backlog stood at the interval's start or end (its
// first tokens waited in that queue); none from an overloaded pool
// (requests waiting to join a decode batch, or prefill offered at or above
// its workers). Means, because the TTFT quantiles of heavy-tailed prompt
// lengths say more about the longest prompts than about the queue. The
// cold start is learned from the policy's own scale-ups (the time until
// the ready count grew), the configured one until then.
#pragma once

#include <array>
#include <deque>
#include <vector>

#include "planner/demand_history.h"
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
  // the sizing from a prompt-length mix (G/G/N per class at `arrival_scv`,
  // decode weighted by decode time); the means model above when `mix` is empty.
  RoleCounts sizeForMix(double rate, const PromptMix& mix, double arrival_scv = 1) const;
  // one interval exactly, as if its traffic were known before it came (the
  // simulator's perfect-foresight bound): prefill at its busiest rate
  // (peak_request_rate, else its mean) with its own mix and arrival scv,
  // decode at its mean rate (or, when measured, at least for the requests
  // it held in decode: decode_requests), with the corrections learned so
  // far; no window, no burst envelope.
  RoleCounts sizeForInterval(const LoadSample& interval) const;
  // adds an interval's mix to the window decide() sizes with.
  void observeMix(const PromptMix& mix);
  // adds an interval's mix and arrival scv (when measured) to the windows.
  void observe(const LoadSample& sample);
  const PromptMix& mix() const { return mix_; }
  // the window's interarrival scv (1 until one is measured).
  double arrivalScv() const { return scv_weight_ > 0 ? scv_sum_ / scv_weight_ : 1; }
  // the prefill worker-seconds a second that `sample`'s arrivals offer at
  // the profile (no correction), at its busiest rate: its mix's classes,
  // else its means.
  double prefillDemand(const LoadSample& sample) const;
  // how long the mix window remembers (an interval's weight decays by
  // e^{-interval / kMixWindowS}).
  static constexpr double kMixWindowS = 300;
  double ttftCorrection() const { return ttft_correction_; }
  double itlCorrection() const { return itl_correction_; }
  // the cold start decide() plans with: the learned one once seen.
  double coldStartS() const { return learned_cold_start_s_ > 0 ? learned_cold_start_s_ : config_.cold_start_s; }

 private:
  void learn(const LoadSample& observed, const RoleCounts& current);
  // each prefill worker's queued work would wait over kBacklogShareOfSlo of
  // the TTFT SLO (prompts of isl tokens).
  bool prefillBacklogged(const LoadSample& observed, double isl) const;
  void learnColdStart(const PolicyInputs& in);
  double prefillServiceS(double isl, double cached_fraction) const;
  int decodeWorkers(double rate, double isl, double osl) const;
  // the decode workers `in_decode` requests (prompts of isl tokens,
  // outputs of osl) need; the batch one may hold at `context` tokens.
  int decodeWorkersFor(double in_decode, double isl, double osl) const;
  int decodeBatch(double context, double kv_tokens) const;
  // the mix's classes: share and prefill time (with the TTFT correction).
  std::vector<ServiceClass> classes(const PromptMix& mix) const;
  // the burst envelope (demand_history.h over the intervals' busiest
  // rates): the last rate plus the burst_quantile of the rises seen within
  // a cold start less their counting noise, at most the most seen.
  double burstRate() const;
  // the intervals of a cold start and one interval.
  int horizonIntervals() const;
  // the fast path on queued prefill work: 0, or the prefill workers that
  // serve the arrivals the queue's growth says the `served` ones (ready
  // through the interval) could not.
  int backlogPrefillWorkers(const LoadSample& observed, double isl, int served);

  const PolicyConfig config_;
  const WorkerProfile& profile_;
  double ttft_correction_ = 1;
  double itl_correction_ = 1;
  RoleCounts down_streak_;
  PromptMix mix_;
  double scv_sum_ = 0, scv_weight_ = 0;
  DemandHistory rates_;  // each interval's busiest rate (peak_request_rate)
  // per role: when each worker asked for and not yet ready was asked, oldest first.
  std::array<std::deque<double>, 2> starting_since_;
  RoleCounts last_ready_;
  double learned_cold_start_s_ = 0;
  double last_queued_s_ = 0;  // prefill worker-seconds queued at the last decision
  double last_rate_window_s_ = 1;  // the seconds the last rate in rates_ was counted over
  bool backlogged_before_ = false;  // prefillBacklogged at the last decision
};

}  // namespace tandem::planner
