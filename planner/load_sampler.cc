#include "planner/load_sampler.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/prompt_mix_series.h"

namespace tandem::planner {
namespace {

// the endpoints of generation requests (router/generate, router/grpc).
constexpr const char* kGenerateEndpoints[] = {"completions", "chat", "grpc_generate"};

double finishedRequests(const MetricsSnapshot& m) {
  double total = 0;
  for (const char* endpoint : kGenerateEndpoints) {
    total += m.sum("tandem:requests_total", {{"endpoint", endpoint}});
  }
  return total;
}

// the prompt-length mix between two scrapes: counter deltas per range
// (common/prompt_mix_series.h); empty when the router exports none.
absl::StatusOr<PromptMix> mixBetween(const MetricsSnapshot& before, const MetricsSnapshot& after) {
  PromptMix mix;
  if (!after.has(prompt_mix::kRequests)) return mix;
  for (size_t k = 0; k < PromptMix::kRanges; ++k) {
    const MetricLabels range = {{prompt_mix::kRangeLabel, prompt_mix::rangeLabel(k)}};
    for (auto [name, field] : {std::pair{prompt_mix::kRequests, &mix.requests},
                               std::pair{prompt_mix::kPromptTokens, &mix.prompt_tokens},
                               std::pair{prompt_mix::kUncachedTokens, &mix.uncached_tokens},
                               std::pair{prompt_mix::kOutputTokens, &mix.output_tokens},
                               std::pair{prompt_mix::kPromptXOutput, &mix.prompt_x_output}}) {
      const double d = after.sum(name, range) - before.sum(name, range);
      if (d < 0) return absl::FailedPreconditionError("a counter went down between scrapes (the router restarted)");
      (*field)[k] = d;
    }
  }
  return mix;
}

double roleSum(const MetricsSnapshot& m, const char* name, bool decode) {
  return decode ? m.sum(name, {{"role", "decode"}}) + m.sum(name, {{"role", "both"}})
                : m.sum(name, {{"role", "prefill"}});
}

}  // namespace

double histogramQuantile(const HistogramBuckets& h, double q) {
  if (h.cumulative.empty() || h.cumulative.back() <= 0) return 0;
  const double rank = std::clamp(q, 0.0, 1.0) * h.cumulative.back();
  double lower = 0, below = 0;
  for (size_t i = 0; i < h.cumulative.size(); ++i) {
    const double upper = h.upper_bounds[i];
    if (h.cumulative[i] >= rank) {
      if (std::isinf(upper)) return lower;  // the largest finite bound
      const double in_bucket = h.cumulative[i] - below;
      if (in_bucket <= 0) return upper;
      return lower + (upper - lower) * (rank - below) / in_bucket;
    }
    lower = std::isinf(upper) ? lower : upper;
    below = h.cumulative[i];
  }
  return lower;
}

double histogramShareBelow(const HistogramBuckets& h, double bound) {
  if (h.cumulative.empty() || h.cumulative.back() <= 0) return 1;
  const double total = h.cumulative.back();
  double lower = 0, below = 0;
  for (size_t i = 0; i < h.cumulative.size(); ++i) {
    const double upper = h.upper_bounds[i];
    if (bound <= upper) {
      if (std::isinf(upper)) return below / total;
      const double in_bucket = h.cumulative[i] - below;
      return (below + in_bucket * (bound - lower) / (upper - lower)) / total;
    }
    lower = upper;
    below = h.cumulative[i];
  }
  return 1;
}

absl::StatusOr<HistogramBuckets> histogramDelta(const HistogramBuckets& after,
                                                const HistogramBuckets& before) {
  if (before.upper_bounds.empty()) return after;
  if (after.upper_bounds != before.upper_bounds) {
    return absl::FailedPreconditionError("the histogram's buckets changed between scrapes");
  }
  HistogramBuckets d = after;
  for (size_t i = 0; i < d.cumulative.size(); ++i) {
    d.cumulative[i] -= before.cumulative[i];
    if (d.cumulative[i] < 0) return absl::FailedPreconditionError("a histogram count went down (restart)");
  }
  d.sum -= before.sum;
  d.count -= before.count;
  return d;
}

absl::StatusOr<LoadSample> loadBetween(const MetricsSnapshot& before, const MetricsSnapshot& after,
                                       double time_s, double interval_s, const SloBounds& slo) {
  if (!(interval_s > 0)) return absl::InvalidArgumentError("the interval must be positive");
  LoadSample s;
  s.time_s = time_s;
  s.interval_s = interval_s;
  auto delta = [&](const char* name) { return after.sum(name) - before.sum(name); };
  const double finished = finishedRequests(after) - finishedRequests(before);
  const double completed = delta("tandem:e2e_request_latency_seconds_count");
  const double prompt = delta("tandem:prompt_tokens_total");
  const double generated = delta("tandem:generation_tokens_total");
  const double cached = delta("tandem:prefix_cache_hit_tokens_total");
  if (finished < 0 || completed < 0 || prompt < 0 || generated < 0 || cached < 0) {
    return absl::FailedPreconditionError("a counter went down between scrapes (the router restarted)");
  }
  const double arrived = finished + delta("tandem:requests_in_flight");
  s.request_rate = std::max(0.0, arrived) / interval_s;
  if (completed > 0) {
    s.mean_input_tokens = prompt / completed;
    s.mean_output_tokens = generated / completed;
  }
  if (prompt > 0) s.cached_fraction = std::clamp(cached / prompt, 0.0, 1.0);
  absl::StatusOr<PromptMix> mix = mixBetween(before, after);
  if (!mix.ok()) return mix.status();
  s.mix = *mix;

  absl::StatusOr<HistogramBuckets> ttft = histogramDelta(after.histogram("tandem:time_to_first_token_seconds"),
                                                         before.histogram("tandem:time_to_first_token_seconds"));
  if (!ttft.ok()) return ttft.status();
  absl::StatusOr<HistogramBuckets> itl = histogramDelta(after.histogram("tandem:inter_token_latency_seconds"),
                                                        before.histogram("tandem:inter_token_latency_seconds"));
  if (!itl.ok()) return itl.status();
  s.ttft_p50_ms = histogramQuantile(*ttft, 0.5) * 1000;
  s.ttft_p95_ms = histogramQuantile(*ttft, 0.95) * 1000;
  s.itl_p50_ms = histogramQuantile(*itl, 0.5) * 1000;
  s.itl_p95_ms = histogramQuantile(*itl, 0.95) * 1000;
  // means (what the sla policy learns its corrections from): sum / count.
  if (ttft->count > 0) s.ttft_mean_ms = ttft->sum / ttft->count * 1000;
  if (itl->count > 0) s.itl_mean_ms = itl->sum / itl->count * 1000;
  s.ttft_slo_attainment = histogramShareBelow(*ttft, slo.ttft_ms / 1000);
  s.itl_slo_attainment = histogramShareBelow(*itl, slo.itl_ms / 1000);

  s.ready.prefill = static_cast<int>(after.sum("tandem:router_workers", {{"role", "prefill"}, {"state", "healthy"}}));
  s.ready.decode = static_cast<int>(after.sum("tandem:router_workers", {{"role", "decode"}, {"state", "healthy"}}) +
                                    after.sum("tandem:router_workers", {{"role", "both"}, {"state", "healthy"}}));
  // without prefill workers the decode workers prefill every prompt.
  const bool prefill_on_decode = s.ready.prefill == 0;
  const double queued = roleSum(after, "tandem:router_role_prefill_tokens_queued", prefill_on_decode);
  const int prefillers = prefill_on_decode ? s.ready.decode : s.ready.prefill;
  if (prefillers > 0) s.prefill_queue_tokens = queued / prefillers;
  const double kv_blocks = roleSum(after, "tandem:router_role_kv_blocks", true);
  if (kv_blocks > 0) s.decode_kv_utilization = roleSum(after, "tandem:router_role_kv_used_blocks", true) / kv_blocks;
  if (s.ready.decode > 0) {
    s.decode_queue_requests = roleSum(after, "tandem:router_role_requests_waiting", true) / s.ready.decode;
  }
  return s;
}

}  // namespace tandem::planner
