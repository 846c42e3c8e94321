// Turns two scrapes of the router's /metrics into one LoadSample: rates
// from counter deltas, latency percentiles and SLO attainment from the
// TTFT and inter-token histograms' bucket deltas, worker counts and
// saturation from the gauges of the later scrape. The router's metrics it
// reads (router/metrics/serving_metrics.h, router/cluster/cluster_metrics.h):
//   tandem:requests_total{endpoint}, tandem:requests_in_flight — arrivals
//   tandem:e2e_request_latency_seconds_count — requests completed
//   tandem:prompt_tokens_total, tandem:generation_tokens_total,
//   tandem:prefix_cache_hit_tokens_total — ISL, OSL, cached share
//   tandem:time_to_first_token_seconds, tandem:inter_token_latency_seconds
//   tandem:router_workers{role,state="healthy"} — ready workers
//   tandem:router_role_{requests_waiting,prefill_tokens_queued,kv_blocks,kv_used_blocks}{role}
//   tandem:prompt_mix_*_total{range} — the prompt-length mix (LoadSample::mix;
//     common/prompt_mix_series.h), empty when the router exports none
#pragma once

#include "absl/status/statusor.h"
#include "planner/planner_types.h"
#include "common/prometheus_text.h"

namespace tandem::planner {

struct SloBounds {
  double ttft_ms = 500;
  double itl_ms = 50;
};

// the p-quantile (0..1) of what a histogram delta counted, interpolated
// linearly inside its bucket (as PromQL's histogram_quantile); 0 when it
// counted nothing. A quantile in the +Inf bucket is the largest finite bound.
double histogramQuantile(const HistogramBuckets& h, double q);
// the share (0..1) of observations at or below `bound`, interpolated
// inside its bucket; 1 when it counted nothing.
double histogramShareBelow(const HistogramBuckets& h, double bound);
// after − before, bucket by bucket (the same bounds); FailedPrecondition
// when a count went down (the router restarted) or the bounds differ.
absl::StatusOr<HistogramBuckets> histogramDelta(const HistogramBuckets& after,
                                                const HistogramBuckets& before);

// the interval from `before` to `after` (`interval_s` apart, ending at
// `time_s`). FailedPrecondition when a counter went down between them (the
// router restarted: the interval cannot be measured).
absl::StatusOr<LoadSample> loadBetween(const MetricsSnapshot& before, const MetricsSnapshot& after,
                                       double time_s, double interval_s, const SloBounds& slo);

}  // namespace tandem::planner
