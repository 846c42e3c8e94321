// Percentiles, per-request records and the run summary, on values whose
// answers are known exactly.
#include "bench/loadgen/metrics.h"

#include <gtest/gtest.h>

namespace tandem::bench {
namespace {

using std::chrono::milliseconds;

TEST(MetricsTest, PercentilesInterpolateLikeNumpy) {
  std::vector<double> v = {1, 1, 2, 3, 3, 4, 5, 5, 6, 9};  // sorted
  EXPECT_DOUBLE_EQ(percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(percentile(v, 25), 2.25);
  EXPECT_DOUBLE_EQ(percentile(v, 50), 3.5);
  EXPECT_DOUBLE_EQ(percentile(v, 90), 6.3);
  EXPECT_DOUBLE_EQ(percentile(v, 99), 8.73);
  EXPECT_DOUBLE_EQ(percentile(v, 100), 9);
  EXPECT_DOUBLE_EQ(percentile({7}, 99), 7);
  EXPECT_DOUBLE_EQ(percentile({}, 50), 0);
}

TEST(MetricsTest, DistributionSortsItsInput) {
  Distribution d = distributionOf({3, 1, 4, 1, 5, 9, 2, 6, 5, 3});
  EXPECT_EQ(d.count, 10u);
  EXPECT_DOUBLE_EQ(d.mean, 3.9);
  EXPECT_DOUBLE_EQ(d.p50, 3.5);
  EXPECT_DOUBLE_EQ(d.p90, 6.3);
  EXPECT_DOUBLE_EQ(d.p99, 8.73);
  EXPECT_DOUBLE_EQ(d.max, 9);
}

TEST(MetricsTest, RecordTimesTtftItlTpotAndE2e) {
  Clock::time_point t0 = Clock::time_point() + std::chrono::seconds(100);
  BenchRequest req;
  req.index = 4;
  req.input_tokens = 50;
  StreamResult res;
  res.ok = true;
  res.start = t0 + milliseconds(1000);
  res.token_times = {res.start + milliseconds(200), res.start + milliseconds(230), res.start + milliseconds(270)};
  res.end = res.start + milliseconds(280);
  res.completion_tokens = 3;
  res.cached_tokens = 16;
  RequestRecord r = makeRecord(req, res, t0);
  EXPECT_EQ(r.index, 4u);
  EXPECT_DOUBLE_EQ(r.start_s, 1.0);
  EXPECT_DOUBLE_EQ(r.ttft_ms, 200);
  EXPECT_DOUBLE_EQ(r.e2e_ms, 280);
  ASSERT_EQ(r.itl_ms.size(), 2u);
  EXPECT_DOUBLE_EQ(r.itl_ms[0], 30);
  EXPECT_DOUBLE_EQ(r.itl_ms[1], 40);
  ASSERT_TRUE(r.tpot_ms);
  EXPECT_DOUBLE_EQ(*r.tpot_ms, 40);  // (280 - 200) / 2
  EXPECT_EQ(r.input_tokens, 50);     // no usage: the workload's count
  EXPECT_EQ(r.output_tokens, 3);
  EXPECT_EQ(r.cached_tokens, 16);
}

RequestRecord rec(bool ok, double start_s, double ttft, double e2e, int in, int out, std::optional<double> tpot,
                  int cached = -1) {
  RequestRecord r;
  r.ok = ok;
  r.error_kind = ok ? "" : "http_503";
  r.start_s = start_s;
  r.ttft_ms = ttft;
  r.e2e_ms = e2e;
  r.input_tokens = in;
  r.output_tokens = out;
  r.tpot_ms = tpot;
  r.cached_tokens = cached;
  return r;
}

TEST(MetricsTest, SummaryCountsThroughputGoodputAndErrors) {
  std::vector<RequestRecord> records = {
      rec(true, 0.0, 100, 1000, 10, 10, 100, 5),
      rec(true, 0.5, 300, 1500, 20, 5, 300, 0),
      rec(true, 1.0, 50, 500, 30, 1, std::nullopt, 30),
      rec(false, 1.5, 0, 10, 40, 0, std::nullopt),
  };
  records[0].itl_ms = {100, 100};
  Slo slo;
  slo.ttft_ms = 200;
  slo.tpot_ms = 150;
  Summary s = summarize(records, 2.0, slo);
  EXPECT_EQ(s.completed, 3u);
  EXPECT_EQ(s.failed, 1u);
  EXPECT_EQ(s.errors.at("http_503"), 1u);
  EXPECT_DOUBLE_EQ(s.request_throughput, 1.5);
  EXPECT_DOUBLE_EQ(s.input_throughput, 30);   // 60 tokens / 2 s
  EXPECT_DOUBLE_EQ(s.output_throughput, 8);   // 16 tokens / 2 s
  EXPECT_EQ(s.good_requests, 2u);             // #2 misses both; #3 has no TPOT
  ASSERT_TRUE(s.goodput);
  EXPECT_DOUBLE_EQ(*s.goodput, 1.0);
  ASSERT_TRUE(s.cached_token_ratio);
  EXPECT_DOUBLE_EQ(*s.cached_token_ratio, 35.0 / 60.0);
  EXPECT_DOUBLE_EQ(s.ttft_ms.p50, 100);
  EXPECT_DOUBLE_EQ(s.tpot_ms.mean, 200);
  EXPECT_EQ(s.itl_ms.count, 2u);
  EXPECT_DOUBLE_EQ(s.max_concurrency, 2);  // #1 ends at 1.0 s just as #3 starts
}

TEST(MetricsTest, GoodputWithoutAnSloCountsEverySuccessfulRequest) {
  std::vector<RequestRecord> records(3);
  records[0].ok = records[1].ok = true;
  records[0].e2e_ms = records[1].e2e_ms = 100;
  records[2].ok = false;
  records[2].error_kind = "http_503";
  const Summary s = summarize(records, 2.0, Slo{});
  EXPECT_EQ(s.good_requests, 2u);
  ASSERT_TRUE(s.goodput);
  EXPECT_DOUBLE_EQ(*s.goodput, 1.0);  // 2 successful requests / 2 s
}

TEST(MetricsTest, ParsesSlos) {
  auto slo = parseSlo("ttft=500,tpot=50");
  ASSERT_TRUE(slo.ok());
  EXPECT_EQ(*slo->ttft_ms, 500);
  EXPECT_EQ(*slo->tpot_ms, 50);
  EXPECT_FALSE(slo->e2e_ms);
  EXPECT_FALSE(parseSlo("ttft=").ok());
  EXPECT_FALSE(parseSlo("latency=5").ok());
  EXPECT_FALSE(parseSlo("ttft=-1").ok());
  EXPECT_FALSE(parseSlo("").ok());
}

}  // namespace
}  // namespace tandem::bench
