// The dispatch loop against an in-process fake client: concurrency caps,
// open-loop timing, multi-turn conversations, stopping, and the report,
// JSON and plot made from the result.
#include "bench/loadgen/runner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "bench/loadgen/report.h"
#include "bench/loadgen/svg_plot.h"
#include "bench/loadgen/token_synth.h"

namespace tandem::bench {
namespace {

using std::chrono::milliseconds;

// answers every request after `latency` with `tokens` output events 1 ms
// apart, echoing a reply text; records what it was sent.
class FakeClient : public StreamClient {
 public:
  explicit FakeClient(milliseconds latency, int tokens = 3) : latency_(latency), tokens_(tokens) {
    thread_ = std::thread([this] { loop(); });
  }
  ~FakeClient() override { shutdown(); }

  void start(StreamRequest req, std::function<void(StreamResult)> done) override {
    std::lock_guard<std::mutex> lock(mu_);
    Clock::time_point now = Clock::now();
    sent_.push_back(req);
    sent_at_.push_back(now);
    max_in_flight_ = std::max<int>(max_in_flight_, pending_.size() + 1);
    pending_.emplace(now + latency_, Pending{std::move(req), std::move(done), now});
    cv_.notify_one();
  }
  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      cv_.notify_one();
    }
    if (thread_.joinable()) thread_.join();
  }

  std::vector<StreamRequest> sent() { std::lock_guard<std::mutex> l(mu_); return sent_; }
  std::vector<Clock::time_point> sentAt() { std::lock_guard<std::mutex> l(mu_); return sent_at_; }
  int maxInFlight() { std::lock_guard<std::mutex> l(mu_); return max_in_flight_; }

 private:
  struct Pending {
    StreamRequest req;
    std::function<void(StreamResult)> done;
    Clock::time_point start;
  };
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      if (pending_.empty()) {
        cv_.wait(lock);
        continue;
      }
      auto it = pending_.begin();
      if (Clock::now() < it->first) {
        cv_.wait_until(lock, it->first);
        continue;
      }
      Pending p = std::move(it->second);
      pending_.erase(it);
      StreamResult r;
      r.ok = true;
      r.start = p.start;
      for (int i = 0; i < tokens_; ++i) r.token_times.push_back(p.start + latency_ - milliseconds(tokens_ - 1 - i));
      r.end = p.start + latency_;
      r.completion_tokens = tokens_;
      r.text = "reply" + std::to_string(++replies_);
      lock.unlock();
      p.done(std::move(r));
      lock.lock();
    }
  }

  milliseconds latency_;
  int tokens_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::multimap<Clock::time_point, Pending> pending_;
  std::vector<StreamRequest> sent_;
  std::vector<Clock::time_point> sent_at_;
  int max_in_flight_ = 0;
  int replies_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

class RunnerTest : public ::testing::Test {
 protected:
  TokenSynth synth_ = TokenSynth::fromRange(10, 50);
  WorkloadContext ctx_{nullptr, &synth_};
};

TEST_F(RunnerTest, ClosedLoopKeepsExactlyTheConcurrencyInFlight) {
  WorkloadOptions o;
  o.input_len = 5;
  o.output_len = 3;
  auto w = createWorkload("random", o, ctx_);
  ASSERT_TRUE(w.ok());
  FakeClient client(milliseconds(20));
  auto arrivals = closedLoopArrivals();
  RunnerOptions ro;
  ro.max_concurrency = 4;
  ro.num_requests = 20;
  auto run = runBenchmark(**w, *arrivals, client, nullptr, ro, Slo{}, nullptr);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->records.size(), 20u);
  EXPECT_EQ(run->summary.completed, 20u);
  EXPECT_EQ(client.maxInFlight(), 4);
  // 20 requests, 4 at a time, 20 ms each: 5 rounds.
  EXPECT_GE(run->summary.duration_s, 0.1);
  EXPECT_NEAR(run->summary.ttft_ms.mean, 18, 1e-6);  // first of 3 events, 1 ms apart, ends at 20 ms
  EXPECT_EQ(client.sent()[0].prompt_ids.size(), 5u);
  EXPECT_EQ(client.sent()[0].max_tokens, 3);
}

TEST_F(RunnerTest, ClosedLoopWithoutConcurrencyIsRefused) {
  auto w = createWorkload("random", WorkloadOptions{}, ctx_);
  FakeClient client(milliseconds(1));
  auto arrivals = closedLoopArrivals();
  RunnerOptions ro;
  ro.num_requests = 1;
  EXPECT_FALSE(runBenchmark(**w, *arrivals, client, nullptr, ro, Slo{}, nullptr).ok());
}

TEST_F(RunnerTest, EndlessWorkloadNeedsABound) {
  auto w = createWorkload("random", WorkloadOptions{}, ctx_);
  FakeClient client(milliseconds(1));
  auto arrivals = poissonArrivals(10, 1);
  EXPECT_FALSE(runBenchmark(**w, *arrivals, client, nullptr, RunnerOptions{}, Slo{}, nullptr).ok());
}

TEST_F(RunnerTest, TraceArrivalsSendAtTheirTimestamps) {
  // three requests at 0, 100 and 250 ms of trace time, replayed 2x faster.
  class Fixed : public Workload {
   public:
    std::optional<BenchRequest> next() override {
      static const double kTimes[] = {0.0, 0.1, 0.25};
      if (i_ >= 3) return std::nullopt;
      BenchRequest r;
      r.index = i_;
      r.prompt_ids = {1, 2};
      r.input_tokens = 2;
      r.max_tokens = 2;
      r.timestamp_s = kTimes[i_++];
      return r;
    }
    nlohmann::json describe() const override { return {{"kind", "fixed"}}; }
    bool hasTimestamps() const override { return true; }
    uint64_t i_ = 0;
  };
  auto ms = [](Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  // a sleeping loop wakes late, never early; allow a scheduler's slack. A
  // loaded machine can delay one run's wake-ups past it, so a run is tried
  // up to 3 times: a real timing bug misses every time.
  std::vector<double> offsets;
  for (int attempt = 0; attempt < 3; ++attempt) {
    Fixed w;
    FakeClient client(milliseconds(5));
    auto arrivals = traceArrivals(2.0);
    auto run = runBenchmark(w, *arrivals, client, nullptr, RunnerOptions{}, Slo{}, nullptr);
    ASSERT_TRUE(run.ok()) << run.status();
    auto at = client.sentAt();
    ASSERT_EQ(at.size(), 3u);
    offsets = {ms(at[1] - at[0]), ms(at[2] - at[0])};
    if (std::abs(offsets[0] - 50) <= 8 && std::abs(offsets[1] - 125) <= 8) break;
  }
  EXPECT_NEAR(offsets[0], 50, 8);
  EXPECT_NEAR(offsets[1], 125, 8);
  EXPECT_GE(offsets[1], 124);
}

TEST_F(RunnerTest, MultiTurnSendsTheConversationSoFar) {
  // text prompts need no tokenizer; give the turns fixed text.
  class Turns : public Workload {
   public:
    std::optional<BenchRequest> next() override {
      if (i_ >= 4) return std::nullopt;
      BenchRequest r;
      r.index = i_;
      r.session_id = i_ % 2;
      r.turn = static_cast<int>(i_ / 2);
      r.think_time_s = r.turn > 0 ? 0.03 : 0;
      r.prompt_text = "q" + std::to_string(i_);
      r.max_tokens = 2;
      ++i_;
      return r;
    }
    nlohmann::json describe() const override { return {{"kind", "turns"}}; }
    uint64_t i_ = 0;
  } w;
  FakeClient client(milliseconds(10));
  auto arrivals = closedLoopArrivals();
  RunnerOptions ro;
  ro.api = Api::kChat;
  ro.max_concurrency = 2;
  auto run = runBenchmark(w, *arrivals, client, nullptr, ro, Slo{}, nullptr);
  ASSERT_TRUE(run.ok()) << run.status();
  auto sent = client.sent();
  ASSERT_EQ(sent.size(), 4u);
  EXPECT_EQ(sent[0].messages.size(), 1u);
  EXPECT_EQ(sent[1].messages.size(), 1u);
  // the second turns carry [user q, assistant reply, user q'] of their session.
  for (int k = 2; k < 4; ++k) {
    ASSERT_EQ(sent[k].messages.size(), 3u);
    EXPECT_EQ(sent[k].messages[1].role, "assistant");
    EXPECT_EQ(sent[k].messages[1].content.rfind("reply", 0), 0u);
    EXPECT_EQ(sent[k].messages[0].content, sent[k].messages[2].content == "q2" ? "q0" : "q1");
  }
  auto at = client.sentAt();
  // think time: a second turn goes >= 30 ms after its first turn finished (10 ms).
  double gap_ms = std::chrono::duration<double, std::milli>(at[2] - at[0]).count();
  EXPECT_GE(gap_ms, 39);
}

TEST_F(RunnerTest, ReportJsonAndPlotDescribeTheRun) {
  WorkloadOptions o;
  o.input_len = 4;
  o.output_len = 3;
  auto w = createWorkload("random", o, ctx_);
  FakeClient client(milliseconds(4));
  auto arrivals = poissonArrivals(200, 1);
  RunnerOptions ro;
  ro.num_requests = 10;
  Slo slo;
  slo.ttft_ms = 1000;
  auto run = runBenchmark(**w, *arrivals, client, nullptr, ro, slo, nullptr);
  ASSERT_TRUE(run.ok());
  run->label = "rate=200/s";
  run->rate = 200;
  nlohmann::json j = runJson(*run, slo, true);
  for (const char* k : {"ttft_ms", "itl_ms", "tpot_ms", "e2e_ms"}) {
    for (const char* q : {"mean", "p50", "p90", "p99", "max"}) EXPECT_TRUE(j[k].contains(q)) << k << q;
  }
  for (const char* k : {"request_throughput", "input_throughput", "output_throughput", "goodput", "errors",
                        "cached_token_ratio", "workload", "arrival"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_EQ(j["completed"], 10);
  EXPECT_DOUBLE_EQ(j["goodput"].get<double>(), j["request_throughput"].get<double>());
  EXPECT_TRUE(j["cached_token_ratio"].is_null());
  EXPECT_EQ(j["requests"].size(), 10u);
  std::string table = summaryTable(*run, slo);
  EXPECT_NE(table.find("TTFT"), std::string::npos);
  EXPECT_NE(table.find("goodput"), std::string::npos);

  RunResult second = *run;
  second.rate = 400;
  second.label = "rate=400/s";
  std::string svg = renderPlot({*run, second}, "test <plot>");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("test &lt;plot&gt;"), std::string::npos);
  EXPECT_NE(svg.find("time to first token (CDF)"), std::string::npos);
  EXPECT_NE(svg.find("throughput vs offered rate"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  std::string single = renderPlot({*run}, "one");
  EXPECT_EQ(single.find("throughput vs offered rate"), std::string::npos);
  EXPECT_NE(single.find("p99"), std::string::npos);
}

TEST(SvgPlotTest, TicksAreRound) {
  auto expect = [](std::vector<double> got, std::vector<double> want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << i;
  };
  expect(niceTicks(0, 1, 5), {0, 0.2, 0.4, 0.6, 0.8, 1});
  expect(niceTicks(0, 230, 6), {0, 50, 100, 150, 200});
  expect(niceTicks(12, 38, 3), {20, 30});
}

}  // namespace
}  // namespace tandem::bench
