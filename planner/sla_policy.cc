#include "planner/sla_policy.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "planner/queue_model.h"

namespace tandem::planner {
namespace {

constexpr double kSmoothing = 0.3;  // weight of a new correction sample
constexpr double kMinCorrection = 0.5, kMaxCorrection = 2;
constexpr double kItlHeadroom = 0.9;  // share of the ITL SLO the sizing aims at
constexpr double kKvHeadroom = 0.9;   // share of the KV capacity a batch may fill
// share of the largest allowed batch the sizing fills on average: requests
// do not spread evenly over workers and time, and one that finds its
// worker's batch full waits (its ITL pays).
constexpr double kBatchHeadroom = 0.8;

double smooth(double old, double sample) {
  return std::clamp((1 - kSmoothing) * old + kSmoothing * sample, kMinCorrection, kMaxCorrection);
}

}  // namespace

SlaPolicy::SlaPolicy(const PolicyConfig& config) : config_(config), profile_(*config_.profile) {}

double SlaPolicy::prefillServiceS(double isl, double cached_fraction) const {
  return profile_.prefillSeconds(isl * (1 - std::clamp(cached_fraction, 0.0, 1.0)), isl);
}

RoleCounts SlaPolicy::size(double rate, double isl, double osl, double cached_fraction) const {
  RoleCounts need;
  if (rate <= 0 || isl <= 0) return need;
  osl = std::max(1.0, osl);
  // prefill: the wait at the target quantile within what the SLO leaves.
  const double slo_s = config_.ttft_slo_ms / 1000;
  const double service = prefillServiceS(isl, cached_fraction) * ttft_correction_;
  const double max_wait = std::max(slo_s - service, slo_s / 4);
  need.prefill = workersForWait(rate, service, max_wait, config_.target_attainment);
  // decode: requests in decode over the batch a worker may hold.
  const double context = isl + osl / 2;
  const double itl_target = config_.itl_slo_ms * kItlHeadroom / itl_correction_;
  int batch = profile_.maxBatchForItl(itl_target, context);
  const int kv_batch = static_cast<int>(kKvHeadroom * profile_.kvCapacityTokens() / (isl + osl));
  batch = std::max(1, std::min(batch, kv_batch));
  const double itl_s = profile_.decodeItlMs(batch, context) * itl_correction_ / 1000;
  const double in_decode = rate * (osl - 1) * itl_s;
  need.decode = std::max(1, static_cast<int>(std::ceil(in_decode / (kBatchHeadroom * batch))));
  return need;
}

void SlaPolicy::learn(const LoadSample& o, const RoleCounts& current) {
  if (o.request_rate <= 0 || o.mean_input_tokens <= 0) return;
  if (o.ttft_mean_ms > 0 && current.prefill > 0) {
    // the mean TTFT the queue model predicts at the workers there were.
    const double service = prefillServiceS(o.mean_input_tokens, o.cached_fraction);
    const double offered = o.request_rate * service;
    if (offered < current.prefill) {
      const double wait = erlangC(current.prefill, offered) / (current.prefill / service - o.request_rate);
      ttft_correction_ = smooth(ttft_correction_, (o.ttft_mean_ms / 1000) / (service + wait));
    }
    // an overloaded pool predicts no finite TTFT: nothing to learn from it.
  }
  // requests waiting to join a batch mean too few decode workers (the
  // sizing answers that), not a wrong profile: nothing to learn then.
  if (o.itl_mean_ms > 0 && current.decode > 0 && o.decode_queue_requests < 1) {
    const double context = o.mean_input_tokens + o.mean_output_tokens / 2;
    // the batch per worker that rate x OSL x ITL(batch) gives (fixed point).
    double batch = 1;
    for (int i = 0; i < 8; ++i) {
      batch = std::max(1.0, o.request_rate * o.mean_output_tokens *
                                profile_.decodeItlMs(batch, context) / 1000 / current.decode);
    }
    itl_correction_ = smooth(itl_correction_, o.itl_mean_ms / profile_.decodeItlMs(batch, context));
  }
}

ScalingDecision SlaPolicy::decide(const PolicyInputs& in) {
  learn(in.observed, in.current);
  const LoadSample& p = in.predicted;
  const LoadSample& o = in.observed;
  const double rate = std::max(p.request_rate, o.request_rate);
  const double isl = p.mean_input_tokens > 0 ? p.mean_input_tokens : o.mean_input_tokens;
  const double osl = p.mean_output_tokens > 0 ? p.mean_output_tokens : o.mean_output_tokens;
  RoleCounts sized = size(rate, isl, osl, p.cached_fraction);
  // requests already waiting to join a decode batch: the workers they lack
  // beyond the ready ones (those starting count towards it, so a queue that
  // lasts through a cold start is not answered twice).
  if (o.decode_queue_requests >= 1 && o.ready.decode > 0) {
    const double context = isl + osl / 2;
    const int batch = std::max(1, profile_.maxBatchForItl(config_.itl_slo_ms * kItlHeadroom, context));
    const double waiting = o.decode_queue_requests * o.ready.decode;
    sized.decode = std::max(sized.decode, o.ready.decode + static_cast<int>(std::ceil(waiting / batch)));
  }
  const RoleCounts need = clampToBounds(sized, in.bounds);
  RoleCounts desired = in.current;
  for (Role r : {Role::kPrefill, Role::kDecode}) {
    const int n = in.current[r];
    if (need[r] >= n) {
      desired[r] = need[r];
      down_streak_[r] = 0;
    } else if (++down_streak_[r] >= config_.scale_down_after) {
      desired[r] = std::max(need[r], n - std::max(1, n / 5));
      down_streak_[r] = 0;
    }
  }
  desired = clampToBounds(desired, in.bounds);
  std::string reason = absl::StrFormat(
      "rate %.2f/s isl %.0f osl %.0f cached %.2f -> need prefill %d decode %d "
      "(corrections ttft %.2f itl %.2f)",
      rate, isl, osl, p.cached_fraction, need.prefill, need.decode, ttft_correction_, itl_correction_);
  return {desired, reason};
}

}  // namespace tandem::planner
