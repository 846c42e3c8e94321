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

double smooth(double old, double sample, double lowest = kMinCorrection) {
  return std::clamp((1 - kSmoothing) * old + kSmoothing * sample, lowest, kMaxCorrection);
}

// a prefill backlog counts once each worker's share of it would wait this
// share of the TTFT SLO.
constexpr double kBacklogShareOfSlo = 0.5;

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
  need.decode = decodeWorkers(rate, isl, osl);
  return need;
}

// decode: requests in decode over the batch a worker may hold.
int SlaPolicy::decodeWorkers(double rate, double isl, double osl) const {
  const double context = isl + osl / 2;
  const double itl_target = config_.itl_slo_ms * kItlHeadroom / itl_correction_;
  int batch = profile_.maxBatchForItl(itl_target, context);
  const int kv_batch = static_cast<int>(kKvHeadroom * profile_.kvCapacityTokens() / (isl + osl));
  batch = std::max(1, std::min(batch, kv_batch));
  const double itl_s = profile_.decodeItlMs(batch, context) * itl_correction_ / 1000;
  const double in_decode = rate * (osl - 1) * itl_s;
  return std::max(1, static_cast<int>(std::ceil(in_decode / (kBatchHeadroom * batch))));
}

std::vector<ServiceClass> SlaPolicy::classes(const PromptMix& mix) const {
  std::vector<ServiceClass> out;
  const double total = mix.total();
  for (size_t k = 0; k < PromptMix::kRanges; ++k) {
    if (mix.requests[k] <= 0) continue;
    const double prompt = mix.prompt_tokens[k] / mix.requests[k];
    const double uncached = mix.uncached_tokens[k] / mix.requests[k];
    out.push_back({mix.requests[k] / total, profile_.prefillSeconds(uncached, prompt) * ttft_correction_});
  }
  return out;
}

RoleCounts SlaPolicy::sizeForMix(double rate, const PromptMix& mix) const {
  double n = 0, prompt = 0, uncached = 0, output = 0, prompt_x_output = 0;
  for (size_t k = 0; k < PromptMix::kRanges; ++k) {
    n += mix.requests[k];
    prompt += mix.prompt_tokens[k];
    uncached += mix.uncached_tokens[k];
    output += mix.output_tokens[k];
    prompt_x_output += mix.prompt_x_output[k];
  }
  if (n <= 0 || prompt <= 0) return {};
  if (output <= 0) return size(rate, prompt / n, 1, 1 - uncached / prompt);
  RoleCounts need;
  if (rate <= 0) return need;
  const std::vector<ServiceClass> c = classes(mix);
  need.prefill = workersForAttainment(rate, c, config_.ttft_slo_ms / 1000, config_.target_attainment);
  // a batch holds requests in proportion to how long they decode.
  need.decode = decodeWorkers(rate, prompt_x_output / output, output / n);
  return need;
}

void SlaPolicy::observeMix(const PromptMix& mix) {
  if (mix.empty()) return;
  mix_.blend(mix, std::exp(-config_.interval_s / kMixWindowS));
}

void SlaPolicy::learn(const LoadSample& o, const RoleCounts& current) {
  if (o.request_rate <= 0 || o.mean_input_tokens <= 0) return;
  if (o.ttft_mean_ms > 0 && current.prefill > 0) {
    // the mean TTFT the queue model predicts at the workers there were.
    // M/G/N over the mix's classes where there is one (M/M/N at the mean
    // prompt otherwise), the correction learned so far taken out.
    double service = prefillServiceS(o.mean_input_tokens, o.cached_fraction);
    double scv = 1;
    if (!mix_.empty()) {
      double m1 = 0, m2 = 0;
      for (const ServiceClass& c : classes(mix_)) {
        const double s = c.service_s / ttft_correction_;
        m1 += c.share * s;
        m2 += c.share * s * s;
      }
      service = m1;
      scv = m1 > 0 ? std::max(0.0, m2 / (m1 * m1) - 1) : 1;
    }
    if (o.request_rate * service < current.prefill) {
      const double wait = mgnMeanWaitS(current.prefill, o.request_rate, service, scv);
      // never below 1: a TTFT faster than the model says that its wait
      // (Allen-Cunneen, pessimistic for a router that picks the shortest
      // queue) is too long, not that prefill beats the profile; scaling
      // the service down for it shrank the pool until it overflowed.
      ttft_correction_ = smooth(ttft_correction_, (o.ttft_mean_ms / 1000) / (service + wait), 1.0);
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
  observeMix(in.observed.mix);
  learn(in.observed, in.current);
  const LoadSample& p = in.predicted;
  const LoadSample& o = in.observed;
  const double rate = std::max(p.request_rate, o.request_rate);
  const double isl = p.mean_input_tokens > 0 ? p.mean_input_tokens : o.mean_input_tokens;
  const double osl = p.mean_output_tokens > 0 ? p.mean_output_tokens : o.mean_output_tokens;
  RoleCounts sized = mix_.empty() ? size(rate, isl, osl, p.cached_fraction) : sizeForMix(rate, mix_);
  // requests already waiting to join a decode batch: the workers they lack
  // beyond the ready ones (those starting count towards it, so a queue that
  // lasts through a cold start is not answered twice).
  if (o.decode_queue_requests >= 1 && o.ready.decode > 0) {
    const double context = isl + osl / 2;
    const int batch = std::max(1, profile_.maxBatchForItl(config_.itl_slo_ms * kItlHeadroom, context));
    const double waiting = o.decode_queue_requests * o.ready.decode;
    sized.decode = std::max(sized.decode, o.ready.decode + static_cast<int>(std::ceil(waiting / batch)));
  }
  // a prefill backlog the sizing did not foresee (a burst of long prompts):
  // workers to clear it within the TTFT SLO, beyond the ready ones (those
  // starting count towards it, so it is answered once).
  if (o.ready.prefill > 0 && o.prefill_queue_tokens > 0) {
    const double per_worker_s = o.prefill_queue_tokens / profile_.prefillTokensPerS(std::max(1.0, isl));
    const double slo_s = config_.ttft_slo_ms / 1000;
    if (per_worker_s > kBacklogShareOfSlo * slo_s) {
      const int extra = static_cast<int>(std::ceil(per_worker_s * o.ready.prefill / slo_s));
      sized.prefill = std::max(sized.prefill, o.ready.prefill + std::min(extra, o.ready.prefill));
    }
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
      "rate %.2f/s isl %.0f osl %.0f cached %.2f%s -> need prefill %d decode %d "
      "(corrections ttft %.2f itl %.2f)",
      rate, isl, osl, p.cached_fraction, mix_.empty() ? "" : " (prompt-length mix)", need.prefill, need.decode,
      ttft_correction_, itl_correction_);
  return {desired, reason};
}

}  // namespace tandem::planner
