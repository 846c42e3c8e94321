#include "planner/load_sampler.h"

#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/prompt_mix_series.h"
#include "gtest/gtest.h"
#include "router/metrics/serving_metrics.h"

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

// prompts of a long-tailed trace, as the router counts them when they
// finish: (prompt, cached, generated) tokens.
struct FinishedPrompt {
  int prompt, cached, generated;
};
const std::vector<FinishedPrompt> kEarlierPrompts = {{300, 100, 10}, {5000, 0, 40}};
const std::vector<FinishedPrompt> kIntervalPrompts = {
    {100, 0, 20}, {512, 512, 5}, {513, 13, 7}, {900, 100, 30}, {20000, 4000, 50}, {200000, 0, 2}};

void finish(router::ServingMetrics& router, const std::vector<FinishedPrompt>& prompts) {
  for (const FinishedPrompt& p : prompts) {
    router.countPrompt(p.prompt, p.cached, p.generated);
    router.observeE2e(1);
    router.countRequest("completions", 200);
  }
}

TEST(LoadBetweenTest, BuildsThePromptMixFromTwoScrapesOfTheRoutersMetrics) {
  router::ServingMetrics router;
  finish(router, kEarlierPrompts);
  const MetricsSnapshot before = parse(router.render());
  finish(router, kIntervalPrompts);
  const MetricsSnapshot after = parse(router.render());
  absl::StatusOr<LoadSample> s = loadBetween(before, after, 20, 10, {});
  ASSERT_TRUE(s.ok()) << s.status();
  // the interval's prompts only, each in its range, as the simulator adds them.
  PromptMix expected;
  for (const FinishedPrompt& p : kIntervalPrompts) expected.add(p.prompt, p.prompt - p.cached, p.generated);
  EXPECT_EQ(s->mix.requests, expected.requests);
  EXPECT_EQ(s->mix.prompt_tokens, expected.prompt_tokens);
  EXPECT_EQ(s->mix.uncached_tokens, expected.uncached_tokens);
  EXPECT_EQ(s->mix.output_tokens, expected.output_tokens);
  EXPECT_EQ(s->mix.prompt_x_output, expected.prompt_x_output);
  EXPECT_EQ(s->mix.requests[0], 2);  // 100 and 512: a range holds its upper edge
  EXPECT_EQ(s->mix.requests[1], 2);  // 513 and 900
  EXPECT_EQ(s->mix.requests[PromptMix::kRanges - 1], 1);  // beyond the last edge
  EXPECT_EQ(s->mix.total(), 6);
  // the means agree with the mix.
  EXPECT_DOUBLE_EQ(s->mean_input_tokens, (100 + 512 + 513 + 900 + 20000 + 200000) / 6.0);
}

TEST(LoadBetweenTest, RefusesAnIntervalWhoseMixCountersWentDown) {
  // only the mix went down (its range's counters reset): nothing to measure.
  auto with_mix = [](int finished, int in_range) {
    std::string text = routerMetrics(finished, 0, finished, 0);
    for (size_t k = 0; k < prompt_mix::kRanges; ++k) {
      absl::StrAppend(&text, prompt_mix::kRequests, "{", prompt_mix::kRangeLabel, "=\"", prompt_mix::rangeLabel(k),
                      "\"} ", k == 3 ? in_range : 0, "\n");
    }
    return text;
  };
  const MetricsSnapshot before = parse(with_mix(10, 5));
  ASSERT_TRUE(loadBetween(before, parse(with_mix(30, 9)), 20, 10, {}).ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(loadBetween(before, parse(with_mix(30, 3)), 20, 10, {}).status()));
}

}  // namespace
}  // namespace tandem::planner
