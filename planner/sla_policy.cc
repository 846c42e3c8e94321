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

// a rise of the busiest rates within this many standard deviations of their
// counting noise is not a burst (burstRate).
constexpr double kBurstNoiseSigmas = 3;

// a prefill backlog counts once each worker's share of it would wait this
// share of the TTFT SLO.
constexpr double kBacklogShareOfSlo = 0.5;

// the TTFT correction learns only where the modelled wait is at most this
// share of the prefill time.
constexpr double kLearnWaitShare = 0.25;

struct MixTotals {
  double n = 0, prompt = 0, uncached = 0, output = 0, prompt_x_output = 0;
};

MixTotals totals(const PromptMix& mix) {
  MixTotals t;
  for (size_t k = 0; k < PromptMix::kRanges; ++k) {
    t.n += mix.requests[k];
    t.prompt += mix.prompt_tokens[k];
    t.uncached += mix.uncached_tokens[k];
    t.output += mix.output_tokens[k];
    t.prompt_x_output += mix.prompt_x_output[k];
  }
  return t;
}

}  // namespace

SlaPolicy::SlaPolicy(const PolicyConfig& config)
    : config_(config),
      profile_(*config_.profile),
      rates_(static_cast<size_t>(std::ceil(std::max(config.burst_window_s, config.interval_s) / config.interval_s))) {}

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
  const int batch = decodeBatch(context, isl + osl);
  const double itl_s = profile_.decodeItlMs(batch, context) * itl_correction_ / 1000;
  return decodeWorkersFor(rate * (osl - 1) * itl_s, isl, osl);
}

int SlaPolicy::decodeWorkersFor(double in_decode, double isl, double osl) const {
  const int batch = decodeBatch(isl + osl / 2, isl + osl);
  return std::max(1, static_cast<int>(std::ceil(in_decode / (kBatchHeadroom * batch))));
}

int SlaPolicy::decodeBatch(double context, double kv_tokens) const {
  const double itl_target = config_.itl_slo_ms * kItlHeadroom / itl_correction_;
  const int batch = profile_.maxBatchForItl(itl_target, context);
  const int kv_batch = static_cast<int>(kKvHeadroom * profile_.kvCapacityTokens() / kv_tokens);
  return std::max(1, std::min(batch, kv_batch));
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

RoleCounts SlaPolicy::sizeForMix(double rate, const PromptMix& mix, double arrival_scv) const {
  const MixTotals t = totals(mix);
  if (t.n <= 0 || t.prompt <= 0) return {};
  if (t.output <= 0) return size(rate, t.prompt / t.n, 1, 1 - t.uncached / t.prompt);
  RoleCounts need;
  if (rate <= 0) return need;
  const std::vector<ServiceClass> c = classes(mix);
  need.prefill = workersForAttainment(rate, c, config_.ttft_slo_ms / 1000, config_.target_attainment, arrival_scv);
  // a batch holds requests in proportion to how long they decode.
  need.decode = decodeWorkers(rate, t.prompt_x_output / t.output, t.output / t.n);
  return need;
}

RoleCounts SlaPolicy::sizeForInterval(const LoadSample& s) const {
  const double peak = std::max(s.request_rate, s.peak_request_rate);
  const double scv = s.arrival_scv > 0 ? s.arrival_scv : 1;
  if (s.mix.empty()) {
    return {size(peak, s.mean_input_tokens, s.mean_output_tokens, s.cached_fraction).prefill,
            size(s.request_rate, s.mean_input_tokens, s.mean_output_tokens, s.cached_fraction).decode};
  }
  RoleCounts need{sizeForMix(peak, s.mix, scv).prefill, sizeForMix(s.request_rate, s.mix, scv).decode};
  // the requests it held in decode, where measured: arrivals of earlier
  // intervals decode in it too.
  if (const MixTotals t = totals(s.mix); s.decode_requests > 0 && t.n > 0 && t.output > 0) {
    need.decode = std::max(need.decode, decodeWorkersFor(s.decode_requests, t.prompt_x_output / t.output, t.output / t.n));
  }
  return need;
}

void SlaPolicy::observeMix(const PromptMix& mix) {
  if (mix.empty()) return;
  mix_.blend(mix, std::exp(-config_.interval_s / kMixWindowS));
}

void SlaPolicy::observe(const LoadSample& s) {
  observeMix(s.mix);
  if (s.arrival_scv > 0 && s.request_rate > 0) {
    // weighted by the interval's arrivals, forgetting like the mix.
    const double decay = std::exp(-config_.interval_s / kMixWindowS);
    const double weight = s.request_rate * std::max(s.interval_s, 1e-9);
    scv_sum_ = scv_sum_ * decay + s.arrival_scv * weight;
    scv_weight_ = scv_weight_ * decay + weight;
  }
}

double SlaPolicy::prefillDemand(const LoadSample& s) const {
  const double rate = std::max(s.request_rate, s.peak_request_rate);
  if (rate <= 0) return 0;
  const double total = s.mix.total();
  if (total <= 0) return rate * prefillServiceS(s.mean_input_tokens, s.cached_fraction);
  double seconds = 0;
  for (size_t k = 0; k < PromptMix::kRanges; ++k) {
    if (s.mix.requests[k] <= 0) continue;
    seconds += s.mix.requests[k] * profile_.prefillSeconds(s.mix.uncached_tokens[k] / s.mix.requests[k],
                                                           s.mix.prompt_tokens[k] / s.mix.requests[k]);
  }
  return rate * seconds / total;
}

int SlaPolicy::horizonIntervals() const {
  return std::max(1, static_cast<int>(std::ceil((coldStartS() + config_.interval_s) / config_.interval_s - 1e-9)));
}

double SlaPolicy::burstRate() const {
  const size_t h = static_cast<size_t>(horizonIntervals());
  // what is here, plus what the traffic was seen to add within a cold start
  // (its burst_quantile), never more than the most it reached: from a
  // burst's top the rises it has seen do not stack on it.
  // Less the counting noise: a rate counted over w seconds of arrivals at
  // rate r with interarrival scv c2 varies by about sqrt(r c2 / w) from one
  // interval to the next, so the rises of a steady stream are noise, which
  // the queue model (G/G/N at that scv) already provisions for. Taken off
  // at 3 sigma, a steady or slowly changing rate is sized as it is, not as
  // its noisiest rise, while a burst, many sigmas, counts nearly whole
  // (`bash bench/planner_sim_cv.sh`, bench/RESULTS.md "Autoscaling on
  // traffic it was not tuned on": diurnal 1.20 -> 1.14x the bound, the
  // Gamma trace under static, the Azure code trace x10 4% fewer GPU-hours,
  // every trace that met the SLOs still meeting them).
  const double last = std::max(0.0, rates_.last());
  const double noise = kBurstNoiseSigmas * std::sqrt(last * arrivalScv() / std::max(last_rate_window_s_, 1e-9));
  const double rise = std::max(0.0, rates_.riseQuantile(h, config_.burst_quantile) - noise);
  return std::min(rates_.last() + rise, rates_.peakQuantile(h, 1.0));
}

void SlaPolicy::learn(const LoadSample& o, const RoleCounts& current) {
  // a prefill backlog's first tokens, within the interval or at its start,
  // measure the queue it built, not the prefill time: learnt from, the
  // backlog of a burst's first cold start doubled the prefill time sla sized
  // with for minutes after it (on-off and flash-crowd traces, bench/RESULTS.md
  // "Autoscaling on traffic it was not tuned on").
  const bool backlogged = prefillBacklogged(o, o.mean_input_tokens);
  const bool backlog_seen = backlogged || backlogged_before_;
  backlogged_before_ = backlogged;
  if (o.request_rate <= 0 || o.mean_input_tokens <= 0) return;
  // the workers that served the interval: those ready (the live sampler
  // reports them; a source that does not, the current count).
  const RoleCounts served{o.ready.prefill > 0 ? o.ready.prefill : current.prefill,
                          o.ready.decode > 0 ? o.ready.decode : current.decode};
  if (o.ttft_mean_ms > 0 && served.prefill > 0 && !backlog_seen) {
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
    if (o.request_rate * service < served.prefill) {
      const double wait = mgnMeanWaitS(served.prefill, o.request_rate, service, scv, arrivalScv());
      // never below 1: a TTFT faster than the model says that its wait
      // (Allen-Cunneen, pessimistic for a router that picks the shortest
      // queue) is too long, not that prefill beats the profile; scaling
      // the service down for it shrank the pool until it overflowed. And
      // only where the modelled wait is a small part of the TTFT: the
      // correction scales the prefill time, so it learns how the prefill
      // compares with the profile, not how a queue differs from the model
      // (a busy interval's longer wait taught it to inflate every prefill,
      // and sla ran 20-40% above the counts that meet the SLO).
      const double sample = o.ttft_slo_attainment >= config_.target_attainment ? 1.0 : (o.ttft_mean_ms / 1000) / (service + wait);
      if (wait <= kLearnWaitShare * service) ttft_correction_ = smooth(ttft_correction_, sample, 1.0);
    }
    // an overloaded pool predicts no finite TTFT: nothing to learn from it.
  }
  // requests waiting to join a batch mean too few decode workers (the
  // sizing answers that), not a wrong profile: nothing to learn then.
  if (o.itl_mean_ms > 0 && served.decode > 0 && o.decode_queue_requests < 1) {
    const double context = o.mean_input_tokens + o.mean_output_tokens / 2;
    // the batch per worker that rate x OSL x ITL(batch) gives (fixed point).
    double batch = 1;
    for (int i = 0; i < 8; ++i) {
      batch = std::max(1.0, o.request_rate * o.mean_output_tokens *
                                profile_.decodeItlMs(batch, context) / 1000 / served.decode);
    }
    // within the SLO, only a faster decode than the profile's is news.
    const double ratio = o.itl_mean_ms / profile_.decodeItlMs(batch, context);
    const double sample = o.itl_slo_attainment >= config_.target_attainment ? std::min(1.0, ratio) : ratio;
    itl_correction_ = smooth(itl_correction_, sample);
  }
}

void SlaPolicy::learnColdStart(const PolicyInputs& in) {
  for (Role r : {Role::kPrefill, Role::kDecode}) {
    std::deque<double>& asked = starting_since_[r == Role::kPrefill ? 0 : 1];
    // the workers that became ready are the oldest asked for.
    for (int arrived = in.observed.ready[r] - last_ready_[r]; arrived > 0 && !asked.empty(); --arrived) {
      const double sample = in.observed.time_s - asked.front();
      asked.pop_front();
      learned_cold_start_s_ = learned_cold_start_s_ > 0 ? (1 - kSmoothing) * learned_cold_start_s_ + kSmoothing * sample
                                                        : sample;
    }
    // fewer starting than asked: the newest were cancelled.
    const size_t starting = static_cast<size_t>(std::max(0, in.current[r] - in.observed.ready[r]));
    while (asked.size() > starting) asked.pop_back();
    last_ready_[r] = in.observed.ready[r];
  }
}

bool SlaPolicy::prefillBacklogged(const LoadSample& o, double isl) const {
  return o.prefill_queue_tokens > 0 && o.prefill_queue_tokens / profile_.prefillTokensPerS(std::max(1.0, isl)) >
                                           kBacklogShareOfSlo * config_.ttft_slo_ms / 1000;
}

int SlaPolicy::backlogPrefillWorkers(const LoadSample& o, double isl, int served) {
  const double queued_s = o.prefill_queue_tokens * o.ready.prefill / profile_.prefillTokensPerS(std::max(1.0, isl));
  const double grew_s = queued_s - last_queued_s_;
  last_queued_s_ = queued_s;
  if (o.ready.prefill <= 0 || !prefillBacklogged(o, isl)) return 0;
  // a queued prompt stays at its worker: workers added now serve only the
  // prompts still to come. The queue grew by what the arrivals asked beyond
  // the workers that served the interval: that many more serve them. Those
  // that served it, not those ready at its end: counting the workers that
  // came up at its end as well asked for 25 prefill workers where the
  // growth said 14 (the on-off trace at seed 1, bench/RESULTS.md
  // "Autoscaling on traffic it was not tuned on").
  if (grew_s <= 0) return 0;
  return served + static_cast<int>(std::ceil(grew_s / config_.interval_s));
}

ScalingDecision SlaPolicy::decide(const PolicyInputs& in) {
  observe(in.observed);
  learn(in.observed, in.current);
  // the prefill workers that served the interval: those ready at its start
  // and still at its end (the current count where the source reports none).
  const int ready_prefill = in.observed.ready.prefill > 0 ? in.observed.ready.prefill : in.current.prefill;
  const int served_prefill = last_ready_.prefill > 0 ? std::min(last_ready_.prefill, ready_prefill) : ready_prefill;
  learnColdStart(in);
  rates_.add(std::max(in.observed.request_rate, in.observed.peak_request_rate));
  // the busiest half's rate is counted over half the interval, a mean rate
  // over all of it
  const double interval_s = in.observed.interval_s > 0 ? in.observed.interval_s : config_.interval_s;
  last_rate_window_s_ = in.observed.peak_request_rate > 0 ? interval_s / 2 : interval_s;
  const LoadSample& p = in.predicted;
  const LoadSample& o = in.observed;
  // the forecast, the interval seen, and the burst envelope: what may come
  // within a cold start.
  const double burst_rate = burstRate();
  const double rate = std::max({p.request_rate, o.request_rate, burst_rate});
  const double isl = p.mean_input_tokens > 0 ? p.mean_input_tokens : o.mean_input_tokens;
  const double osl = p.mean_output_tokens > 0 ? p.mean_output_tokens : o.mean_output_tokens;
  RoleCounts sized = mix_.empty() ? size(rate, isl, osl, p.cached_fraction) : sizeForMix(rate, mix_, arrivalScv());
  // requests already waiting to join a decode batch: the workers they lack
  // beyond the ready ones (those starting count towards it, so a queue that
  // lasts through a cold start is not answered twice).
  if (o.decode_queue_requests >= 1 && o.ready.decode > 0) {
    const double context = isl + osl / 2;
    const int batch = std::max(1, profile_.maxBatchForItl(config_.itl_slo_ms * kItlHeadroom, context));
    const double waiting = o.decode_queue_requests * o.ready.decode;
    sized.decode = std::max(sized.decode, o.ready.decode + static_cast<int>(std::ceil(waiting / batch)));
  }
  sized.prefill = std::max(sized.prefill, backlogPrefillWorkers(o, isl, served_prefill));
  const RoleCounts need = clampToBounds(sized, in.bounds);
  // a worker stopped and asked for again within a cold start costs more
  // than one kept: hold at least that long.
  const int hold = std::max(config_.scale_down_after, horizonIntervals());
  // requests waiting on a role say its count is not too many, whatever the
  // sizing says (a profile faster than the serving path, a burst): no step
  // down while they do. On decode, as many as its workers (the bar of the
  // scale-up above): fewer is a moment's wait for a batch slot, or a prompt
  // a decode worker prefills for a short prefill pool, and held the diurnal
  // trace's decode workers one over their need for minutes at a time
  // (bench/RESULTS.md "Autoscaling on traffic it was not tuned on").
  const bool waiting[2] = {prefillBacklogged(o, isl), o.decode_queue_requests >= 1};
  RoleCounts desired = in.current;
  for (Role r : {Role::kPrefill, Role::kDecode}) {
    const int n = in.current[r];
    if (waiting[r == Role::kPrefill ? 0 : 1]) down_streak_[r] = 0;
    if (need[r] >= n) {
      desired[r] = need[r];
      down_streak_[r] = 0;
    } else if (!waiting[r == Role::kPrefill ? 0 : 1] && ++down_streak_[r] >= hold) {
      desired[r] = std::max(need[r], n - std::max(1, n / 5));
      down_streak_[r] = 0;
    }
  }
  desired = clampToBounds(desired, in.bounds);
  for (Role r : {Role::kPrefill, Role::kDecode}) {
    std::deque<double>& asked = starting_since_[r == Role::kPrefill ? 0 : 1];
    for (int k = in.current[r]; k < desired[r]; ++k) asked.push_back(o.time_s);
  }
  std::string reason = absl::StrFormat(
      "rate %.2f/s (burst envelope %.2f/s) isl %.0f osl %.0f cached %.2f%s arrival scv %.2f -> need prefill %d "
      "decode %d (corrections ttft %.2f itl %.2f; cold start %.0f s)",
      rate, burst_rate, isl, osl, p.cached_fraction, mix_.empty() ? "" : " (prompt-length mix)", arrivalScv(),
      need.prefill, need.decode, ttft_correction_, itl_correction_, coldStartS());
  return {desired, reason};
}

}  // namespace tandem::planner
