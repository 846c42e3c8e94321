#include "planner/load_sampler.h"

#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace tandem::planner {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

HistogramBuckets buckets(std::vector<double> bounds, std::vector<double> cumulative) {
  HistogramBuckets h;
  h.upper_bounds = std::move(bounds);
  h.cumulative = std::move(cumulative);
  h.count = h.cumulative.empty() ? 0 : h.cumulative.back();
  return h;
}

TEST(HistogramTest, QuantileInterpolatesInsideItsBucket) {
  // 10 observations: 4 in (0, 0.1], 4 in (0.1, 0.5], 2 above 0.5.
  const HistogramBuckets h = buckets({0.1, 0.5, kInf}, {4, 8, 10});
  EXPECT_DOUBLE_EQ(histogramQuantile(h, 0.2), 0.05);
  EXPECT_DOUBLE_EQ(histogramQuantile(h, 0.6), 0.3);
  // in the +Inf bucket: the largest finite bound.
  EXPECT_DOUBLE_EQ(histogramQuantile(h, 0.95), 0.5);
  EXPECT_EQ(histogramQuantile(buckets({0.1, kInf}, {0, 0}), 0.5), 0);
}

TEST(HistogramTest, ShareBelowABoundInterpolatesAndIsOneWithoutData) {
  const HistogramBuckets h = buckets({0.1, 0.5, kInf}, {4, 8, 10});
  EXPECT_DOUBLE_EQ(histogramShareBelow(h, 0.1), 0.4);
  EXPECT_DOUBLE_EQ(histogramShareBelow(h, 0.3), 0.6);
  EXPECT_DOUBLE_EQ(histogramShareBelow(h, 0.5), 0.8);
  EXPECT_DOUBLE_EQ(histogramShareBelow(h, 10), 0.8);  // beyond the last finite bound: unknown, counted as missed
  EXPECT_EQ(histogramShareBelow(buckets({0.1, kInf}, {0, 0}), 0.1), 1);
}

TEST(HistogramTest, DeltaSubtractsBucketsAndRefusesARestart) {
  absl::StatusOr<HistogramBuckets> d =
      histogramDelta(buckets({0.1, kInf}, {5, 9}), buckets({0.1, kInf}, {1, 2}));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->cumulative, (std::vector<double>{4, 7}));
  EXPECT_EQ(d->count, 7);
  EXPECT_TRUE(absl::IsFailedPrecondition(
      histogramDelta(buckets({0.1, kInf}, {0, 1}), buckets({0.1, kInf}, {1, 2})).status()));
}

// a router's /metrics after `finished` requests of 100 prompt / 20 output
// tokens, with `in_flight` in progress, `ttft_fast` first tokens under
// 0.1 s and `ttft_slow` between 0.5 s and 1 s.
std::string routerMetrics(int finished, int in_flight, int ttft_fast, int ttft_slow) {
  std::string text = absl::StrCat(
      "tandem:requests_total{endpoint=\"completions\",status=\"200\"} ", finished, "\n",
      "tandem:requests_total{endpoint=\"models\",status=\"200\"} 50\n",
      "tandem:requests_in_flight ", in_flight, "\n",
      "tandem:e2e_request_latency_seconds_count ", finished, "\n",
      "tandem:prompt_tokens_total ", finished * 100, "\n",
      "tandem:generation_tokens_total ", finished * 20, "\n",
      "tandem:prefix_cache_hit_tokens_total ", finished * 25, "\n");
  const int total = ttft_fast + ttft_slow;
  for (auto [le, n] : std::vector<std::pair<std::string, int>>{
           {"0.1", ttft_fast}, {"0.5", ttft_fast}, {"1", total}, {"+Inf", total}}) {
    absl::StrAppend(&text, "tandem:time_to_first_token_seconds_bucket{le=\"", le, "\"} ", n, "\n");
    absl::StrAppend(&text, "tandem:inter_token_latency_seconds_bucket{le=\"", le, "\"} ", n * 10, "\n");
  }
  // fast first tokens took 0.05 s, slow ones 0.8 s; every token gap 0.02 s.
  absl::StrAppend(&text, "tandem:time_to_first_token_seconds_sum ", ttft_fast * 0.05 + ttft_slow * 0.8, "\n",
                  "tandem:time_to_first_token_seconds_count ", total, "\n",
                  "tandem:inter_token_latency_seconds_sum ", total * 10 * 0.02, "\n",
                  "tandem:inter_token_latency_seconds_count ", total * 10, "\n");
  absl::StrAppend(&text,
                  "tandem:router_workers{role=\"prefill\",state=\"healthy\"} 2\n"
                  "tandem:router_workers{role=\"prefill\",state=\"unhealthy\"} 1\n"
                  "tandem:router_workers{role=\"decode\",state=\"healthy\"} 3\n"
                  "tandem:router_workers{role=\"both\",state=\"healthy\"} 1\n"
                  "tandem:router_role_prefill_tokens_queued{role=\"prefill\"} 3000\n"
                  "tandem:router_role_requests_waiting{role=\"decode\"} 6\n"
                  "tandem:router_role_requests_waiting{role=\"both\"} 2\n"
                  "tandem:router_role_kv_blocks{role=\"decode\"} 300\n"
                  "tandem:router_role_kv_blocks{role=\"both\"} 100\n"
                  "tandem:router_role_kv_used_blocks{role=\"decode\"} 150\n"
                  "tandem:router_role_kv_used_blocks{role=\"both\"} 50\n");
  return text;
}

MetricsSnapshot parse(const std::string& text) {
  absl::StatusOr<MetricsSnapshot> m = MetricsSnapshot::parse(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return *m;
}

TEST(LoadBetweenTest, MeasuresRatesLengthsLatenciesAndSaturation) {
  const MetricsSnapshot before = parse(routerMetrics(10, 2, 10, 0));
  const MetricsSnapshot after = parse(routerMetrics(30, 4, 25, 5));
  absl::StatusOr<LoadSample> s = loadBetween(before, after, 40, 10, {.ttft_ms = 500, .itl_ms = 100});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->time_s, 40);
  EXPECT_EQ(s->interval_s, 10);
  // 20 finished + 2 more in flight arrived in 10 s; /v1/models is not a request.
  EXPECT_DOUBLE_EQ(s->request_rate, 2.2);
  EXPECT_DOUBLE_EQ(s->mean_input_tokens, 100);
  EXPECT_DOUBLE_EQ(s->mean_output_tokens, 20);
  EXPECT_DOUBLE_EQ(s->cached_fraction, 0.25);
  // the interval's 20 first tokens: 15 fast, 5 slow (0.5..1 s).
  EXPECT_DOUBLE_EQ(s->ttft_slo_attainment, 0.75);
  EXPECT_DOUBLE_EQ(s->itl_slo_attainment, 0.75);
  EXPECT_NEAR(s->ttft_p50_ms, 100.0 * 10 / 15, 1e-9);
  EXPECT_NEAR(s->ttft_p95_ms, 900, 1e-9);
  // the interval's means from the histograms' sums and counts: (15 x 50 + 5 x 800) / 20 ms.
  EXPECT_NEAR(s->ttft_mean_ms, (15 * 50.0 + 5 * 800.0) / 20, 1e-6);
  EXPECT_NEAR(s->itl_mean_ms, 20, 1e-6);
  EXPECT_EQ(s->ready.prefill, 2);
  EXPECT_EQ(s->ready.decode, 4);  // decode + both
  EXPECT_DOUBLE_EQ(s->prefill_queue_tokens, 1500);
  EXPECT_DOUBLE_EQ(s->decode_queue_requests, 2);
  EXPECT_DOUBLE_EQ(s->decode_kv_utilization, 0.5);
}

TEST(LoadBetweenTest, AnIdleIntervalMeetsItsSlosAndHasNoLengths) {
  const MetricsSnapshot m = parse(routerMetrics(10, 0, 10, 0));
  absl::StatusOr<LoadSample> s = loadBetween(m, m, 10, 10, {});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->request_rate, 0);
  EXPECT_EQ(s->mean_input_tokens, 0);
  EXPECT_EQ(s->ttft_slo_attainment, 1);
  EXPECT_EQ(s->itl_slo_attainment, 1);
}

TEST(LoadBetweenTest, RefusesAnIntervalAcrossARouterRestart) {
  const MetricsSnapshot before = parse(routerMetrics(30, 0, 30, 0));
  const MetricsSnapshot after = parse(routerMetrics(5, 0, 5, 0));
  EXPECT_TRUE(absl::IsFailedPrecondition(loadBetween(before, after, 10, 10, {}).status()));
}

}  // namespace
}  // namespace tandem::planner
