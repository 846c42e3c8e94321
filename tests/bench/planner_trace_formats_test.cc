// The planner simulator's trace readers on small files in the published
// formats (Azure LLM inference 2024, BurstGPT), the synthetic bursty
// traces, and a trace's window.
#include "bench/planner_sim/trace_formats.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "bench/planner_sim/synthetic_trace.h"
#include "gtest/gtest.h"

namespace tandem::bench {
namespace {

// the Azure 2024 trace's header and timestamps (seven decimals), one row
// out of order and one with a UTC offset.
constexpr char kAzure2024[] =
    "TIMESTAMP,ContextTokens,GeneratedTokens\n"
    "2024-05-10 00:00:00.0000000,4808,10\n"
    "2024-05-10 00:00:01.5000000,130,2\n"
    "2024-05-10 00:00:00.2500000,7437,0\n"
    "2024-05-10 02:00:03.0000000+02:00,64,1\n";

// BurstGPT as published: seconds from the trace's start; a failed request
// logs no response tokens.
constexpr char kBurstGpt[] =
    "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
    "5,ChatGPT,472,18,490,Conversation log\n"
    "45,ChatGPT,1087,230,1317,Conversation log\n"
    "46,GPT-4,300,0,300,API log\n"
    "118,GPT-4,417,276,693,Conversation log\n";

TEST(TokenTraceTest, ReadsTheAzure2024FormatSortedFromZeroWithUtcOffsets) {
  absl::StatusOr<SimTrace> t = parseTokenTrace(kAzure2024, TokenTraceFormat::kAzure2024, "a.csv", 64);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->requests.size(), 4u);
  EXPECT_DOUBLE_EQ(t->requests[0].arrival_s, 0);
  EXPECT_DOUBLE_EQ(t->requests[1].arrival_s, 0.25);
  EXPECT_EQ(t->requests[1].prompt_tokens, 7437);
  EXPECT_EQ(t->requests[1].output_tokens, 1);  // none generated: one token (the first)
  EXPECT_DOUBLE_EQ(t->requests[2].arrival_s, 1.5);
  EXPECT_DOUBLE_EQ(t->requests[3].arrival_s, 3);  // 02:00:03 at +02:00 is 00:00:03 UTC
  // prompts share no block: 4808 / 64 = 75 blocks of its own.
  EXPECT_EQ(t->requests[0].hashes.size(), 75u);
  EXPECT_EQ(t->distinct_blocks, 75 + 116 + 2 + 1);
}

TEST(TokenTraceTest, ReadsBurstGptSkippingFailedRequests) {
  absl::StatusOr<SimTrace> t = parseTokenTrace(kBurstGpt, TokenTraceFormat::kBurstGpt, "b.csv", 64);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->requests.size(), 3u);
  EXPECT_DOUBLE_EQ(t->requests[0].arrival_s, 0);
  EXPECT_DOUBLE_EQ(t->requests[1].arrival_s, 40);
  EXPECT_DOUBLE_EQ(t->requests[2].arrival_s, 113);
  EXPECT_EQ(t->requests[1].prompt_tokens, 1087);
  EXPECT_EQ(t->requests[1].output_tokens, 230);
}

TEST(TokenTraceTest, MalformedRowsFailNamingTheirLine) {
  auto error = [](const std::string& text, TokenTraceFormat f) {
    return std::string(parseTokenTrace(text, f, "x.csv", 64).status().message());
  };
  EXPECT_NE(error("TIMESTAMP,ContextTokens\n", TokenTraceFormat::kAzure2024).find("x.csv:1: expected a header"),
            std::string::npos);
  EXPECT_NE(error("TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-10 25:00:00,1,1\n", TokenTraceFormat::kAzure2024)
                .find("x.csv:2: cannot read the timestamp"),
            std::string::npos);
  EXPECT_NE(error("Timestamp,Model,Request tokens,Response tokens\n5,ChatGPT,many,1\n", TokenTraceFormat::kBurstGpt)
                .find("x.csv:2: token counts are not integers"),
            std::string::npos);
  EXPECT_NE(error("Timestamp,Model,Request tokens,Response tokens\n5,ChatGPT,1\n", TokenTraceFormat::kBurstGpt)
                .find("x.csv:2: too few columns"),
            std::string::npos);
  EXPECT_NE(error("Timestamp,Model,Request tokens,Response tokens\n5,ChatGPT,10,0\n", TokenTraceFormat::kBurstGpt)
                .find("no requests (1 failed ones skipped)"),
            std::string::npos);
  EXPECT_NE(error("", TokenTraceFormat::kBurstGpt).find("no header"), std::string::npos);
}

TEST(TokenTraceTest, LoadsByKindFromAFileAndWindowsIt) {
  const std::string path = ::testing::TempDir() + "/planner_trace_formats_test.csv";
  std::ofstream(path) << kBurstGpt;
  absl::StatusOr<SimTrace> t = loadPlannerTrace("burstgpt:" + path, 64, 0);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->name, "burstgpt:" + path);
  const SimTrace w = windowTrace(*t, 30, 100);  // [30, 130): the second and third
  ASSERT_EQ(w.requests.size(), 2u);
  EXPECT_DOUBLE_EQ(w.requests[0].arrival_s, 10);
  EXPECT_EQ(loadPlannerTrace("csv:" + path, 64, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(loadPlannerTrace("azure2024:/nonexistent.csv", 64, 0).ok());
  std::filesystem::remove(path);
}

TEST(SyntheticTraceTest, TheSameSeedGivesTheSameTraceAndAnotherADifferentOne) {
  absl::StatusOr<SimTrace> a = loadPlannerTrace("synthetic:on-off:duration_s=600", 64, 1);
  absl::StatusOr<SimTrace> b = loadPlannerTrace("synthetic:on-off:duration_s=600", 64, 1);
  absl::StatusOr<SimTrace> c = loadPlannerTrace("synthetic:on-off:duration_s=600", 64, 2);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << a.status();
  ASSERT_EQ(a->requests.size(), b->requests.size());
  for (size_t i = 0; i < a->requests.size(); ++i) {
    EXPECT_EQ(a->requests[i].arrival_s, b->requests[i].arrival_s);
    EXPECT_EQ(a->requests[i].prompt_tokens, b->requests[i].prompt_tokens);
  }
  EXPECT_NE(a->requests.size(), c->requests.size());
  EXPECT_EQ(a->name, "synthetic:on-off (seed 1)");
}

// arrivals per `width` seconds.
std::vector<int> perWindow(const SimTrace& t, double width, double duration) {
  std::vector<int> n(static_cast<size_t>(duration / width) + 1);
  for (const SimRequest& r : t.requests) ++n[static_cast<size_t>(r.arrival_s / width)];
  return n;
}

TEST(SyntheticTraceTest, AFlashCrowdMultipliesTheRateWithinItsRamp) {
  absl::StatusOr<SimTrace> t = loadPlannerTrace("synthetic:flash-crowd:rate=20,duration_s=1200,every_s=300", 64, 3);
  ASSERT_TRUE(t.ok()) << t.status();
  const std::vector<int> n = perWindow(*t, 10, 1200);
  // some 10 s hold ~5x the base 200 arrivals, others ~the base; a crowd's
  // 10-s ramp goes from one to the other within two windows.
  EXPECT_GT(*std::max_element(n.begin(), n.end()), 850);
  EXPECT_LT(*std::min_element(n.begin(), n.end() - 1), 260);
  bool jump = false;
  for (size_t i = 2; i < n.size(); ++i) jump |= n[i - 2] < 260 && n[i] > 850;
  EXPECT_TRUE(jump);
}

TEST(SyntheticTraceTest, OnOffAlternatesAndDiurnalFollowsItsDayAndGammaIsBursty) {
  absl::StatusOr<SimTrace> d = loadPlannerTrace("synthetic:diurnal:rate=20,period_s=400,duration_s=400", 64, 0);
  ASSERT_TRUE(d.ok()) << d.status();
  // rate x (1 + 0.8 sin): the first half of the day ~1.5x the rate, the
  // second ~0.5x.
  const std::vector<int> halves = perWindow(*d, 200, 400);
  EXPECT_NEAR(halves[0], 200 * 20 * (1 + 0.8 * 2 / 3.14159), 250);
  EXPECT_NEAR(halves[1], 200 * 20 * (1 - 0.8 * 2 / 3.14159), 250);
  // gamma gaps of scv 4: far burstier than Poisson at the same mean rate.
  absl::StatusOr<SimTrace> g = loadPlannerTrace("synthetic:gamma:rate=20,duration_s=500", 64, 0);
  ASSERT_TRUE(g.ok()) << g.status();
  double sum = 0, sq = 0;
  for (size_t i = 1; i < g->requests.size(); ++i) {
    const double gap = g->requests[i].arrival_s - g->requests[i - 1].arrival_s;
    sum += gap;
    sq += gap * gap;
  }
  const double n = static_cast<double>(g->requests.size() - 1);
  EXPECT_NEAR(sq / n / (sum / n * sum / n) - 1, 4, 0.8);
  EXPECT_NEAR(n / 500, 20, 2);
  // on-off: ON windows at 5x, OFF at 0.2x.
  absl::StatusOr<SimTrace> o = loadPlannerTrace("synthetic:on-off:rate=10,duration_s=1200", 64, 0);
  ASSERT_TRUE(o.ok()) << o.status();
  const std::vector<int> n10 = perWindow(*o, 10, 1200);
  EXPECT_GT(*std::max_element(n10.begin(), n10.end()), 400);
  EXPECT_LT(*std::min_element(n10.begin(), n10.end() - 1), 40);
}

TEST(SyntheticTraceTest, RefusesUnknownKindsKeysAndUnboundedTraces) {
  EXPECT_FALSE(parseSyntheticSpec("square").ok());
  EXPECT_FALSE(parseSyntheticSpec("on-off:speed=3").ok());
  EXPECT_FALSE(parseSyntheticSpec("on-off:rate=abc").ok());
  EXPECT_FALSE(parseSyntheticSpec("diurnal:depth=2").ok());
  EXPECT_FALSE(parseSyntheticSpec("gamma:rate=1e6,duration_s=1e6").ok());
  absl::StatusOr<SyntheticTraceOptions> o = parseSyntheticSpec("flash-crowd:rate=7,peak=3");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->rate, 7);
  EXPECT_EQ(o->peak, 3);
}

}  // namespace
}  // namespace tandem::bench
