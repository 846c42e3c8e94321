#include "planner/planner_loop.h"
#include "planner/policies.h"

#include <deque>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/http/http_server.h"
#include "tests/common/http/server_test_util.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "planner/constant_predictor.h"
#include "planner/dry_run_connector.h"
#include "planner/router_metrics_source.h"
#include "planner/sla_policy.h"
#include "router/metrics/serving_metrics.h"

namespace tandem::planner {
namespace {

// test-only seams: samples the test queues, a policy answering what the test says.
class ScriptedSource : public MetricsSource {
 public:
  absl::StatusOr<LoadSample> next(double now_s) override {
    if (script.empty()) return absl::UnavailableError("no sample scripted");
    absl::StatusOr<LoadSample> s = script.front();
    script.pop_front();
    if (s.ok()) s->time_s = now_s;
    return s;
  }
  std::deque<absl::StatusOr<LoadSample>> script;
};

class LastPredictor : public LoadPredictor {
 public:
  const char* name() const override { return "last"; }
  void observe(const LoadSample& s) override {
    last = s;
    ++observed;
  }
  LoadSample predict() const override {
    LoadSample p = last;
    p.request_rate *= 2;  // visibly not the observed
    return p;
  }
  LoadSample last;
  int observed = 0;
};

class AnswerPolicy : public ScalingPolicy {
 public:
  const char* name() const override { return "answer"; }
  ScalingDecision decide(const PolicyInputs& in) override {
    inputs.push_back(in);
    return {answer, "as told"};
  }
  RoleCounts answer;
  std::vector<PolicyInputs> inputs;
};

// DryRunConnector that can be told to fail.
class FlakyConnector : public DryRunConnector {
 public:
  FlakyConnector() : DryRunConnector({1, 1}, [](const std::string&) {}) {}
  absl::StatusOr<RoleCounts> current() override {
    if (fail_current) return absl::UnavailableError("platform down");
    return DryRunConnector::current();
  }
  absl::Status scale(Role role, int target) override {
    scaled.emplace_back(role, target);
    if (fail_scale) return absl::PermissionDeniedError("no rbac");
    return DryRunConnector::scale(role, target);
  }
  bool fail_current = false;
  bool fail_scale = false;
  std::vector<std::pair<Role, int>> scaled;
};

LoadSample sample(double rate) {
  LoadSample s;
  s.request_rate = rate;
  s.interval_s = 10;
  s.ttft_slo_attainment = 0.9;
  return s;
}

class PlannerLoopTest : public ::testing::Test {
 protected:
  PlannerLoopTest() {
    options_.bounds = {.min = {0, 1}, .max = {3, 4}, .max_total = 6};
    options_.log = [this](const std::string& line) { lines_.push_back(nlohmann::json::parse(line)); };
  }
  PlannerLoop& loop() {
    if (!loop_) loop_ = std::make_unique<PlannerLoop>(options_, &source_, &predictor_, &policy_, &connector_, &metrics_);
    return *loop_;
  }
  std::string metricsText() { return metrics_.render(); }

  PlannerLoopOptions options_;
  ScriptedSource source_;
  LastPredictor predictor_;
  AnswerPolicy policy_;
  FlakyConnector connector_;
  PlannerMetrics metrics_;
  std::vector<nlohmann::json> lines_;
  std::unique_ptr<PlannerLoop> loop_;
};

TEST_F(PlannerLoopTest, ScalesEachRoleThatChangesAndLogsItsInputs) {
  source_.script.push_back(sample(3));
  policy_.answer = {2, 1};  // prefill 1 -> 2, decode stays
  ASSERT_TRUE(loop().tick(10).ok());
  EXPECT_EQ(connector_.scaled, (std::vector<std::pair<Role, int>>{{Role::kPrefill, 2}}));
  EXPECT_EQ(*connector_.current(), (RoleCounts{2, 1}));
  ASSERT_EQ(policy_.inputs.size(), 1u);
  EXPECT_EQ(policy_.inputs[0].observed.request_rate, 3);
  EXPECT_EQ(policy_.inputs[0].predicted.request_rate, 6);
  EXPECT_EQ(policy_.inputs[0].current, (RoleCounts{1, 1}));
  ASSERT_EQ(lines_.size(), 1u);
  const nlohmann::json& line = lines_[0];
  EXPECT_EQ(line["decision"], "scale");
  EXPECT_EQ(line["policy"], "answer");
  EXPECT_EQ(line["observed"]["request_rate"], 3);
  EXPECT_EQ(line["predicted"]["request_rate"], 6);
  EXPECT_EQ(line["current"]["prefill"], 1);
  EXPECT_EQ(line["desired"]["prefill"], 2);
  EXPECT_EQ(line["reason"], "as told");
  EXPECT_EQ(line["changes"][0]["role"], "prefill");
  const std::string text = metricsText();
  EXPECT_NE(text.find("tandem:planner_desired_replicas{role=\"prefill\"} 2"), std::string::npos) << text;
  EXPECT_NE(text.find("tandem:planner_observed_request_rate 3"), std::string::npos);
  EXPECT_NE(text.find("tandem:planner_predicted_request_rate 6"), std::string::npos);
  EXPECT_NE(text.find("tandem:planner_ttft_slo_attainment 0.9"), std::string::npos);
  EXPECT_NE(text.find("tandem:planner_decisions_total 1"), std::string::npos);
  EXPECT_NE(text.find("tandem:planner_scale_events_total{direction=\"up\",role=\"prefill\"} 1"), std::string::npos)
      << text;
}

TEST_F(PlannerLoopTest, ClampsTheDecisionToTheBounds) {
  source_.script.push_back(sample(1));
  policy_.answer = {9, 0};  // above max prefill, below min decode
  ASSERT_TRUE(loop().tick(10).ok());
  EXPECT_EQ(*connector_.current(), (RoleCounts{3, 1}));
  EXPECT_EQ(lines_[0]["policy_asked"]["prefill"], 9);
  // the total within max_total, taking from the role furthest above its minimum.
  EXPECT_EQ(clampToBounds({3, 4}, {.min = {0, 1}, .max = {3, 4}, .max_total = 5}), (RoleCounts{2, 3}));
  EXPECT_EQ(clampToBounds({1, 4}, {.min = {1, 1}, .max = {3, 4}, .max_total = 3}), (RoleCounts{1, 2}));
}

TEST_F(PlannerLoopTest, HoldsWhenNothingChanges) {
  source_.script.push_back(sample(1));
  policy_.answer = {1, 1};
  ASSERT_TRUE(loop().tick(10).ok());
  EXPECT_TRUE(connector_.scaled.empty());
  EXPECT_EQ(lines_[0]["decision"], "hold");
}

TEST_F(PlannerLoopTest, AFailedOrStaleSampleDecidesNothing) {
  source_.script.push_back(absl::UnavailableError("connection refused"));
  source_.script.push_back(absl::FailedPreconditionError("stale baseline"));
  policy_.answer = {3, 3};
  EXPECT_TRUE(absl::IsUnavailable(loop().tick(10)));
  EXPECT_TRUE(absl::IsFailedPrecondition(loop().tick(20)));
  EXPECT_TRUE(policy_.inputs.empty());
  EXPECT_EQ(predictor_.observed, 0);
  EXPECT_TRUE(connector_.scaled.empty());
  ASSERT_EQ(lines_.size(), 2u);
  EXPECT_EQ(lines_[0]["decision"], "none");
  EXPECT_NE(lines_[0]["error"].get<std::string>().find("connection refused"), std::string::npos);
  EXPECT_NE(metricsText().find("tandem:planner_errors_total{stage=\"metrics\"} 2"), std::string::npos);
}

TEST_F(PlannerLoopTest, ConnectorFailuresAreCountedAndReported) {
  source_.script.push_back(sample(1));
  connector_.fail_current = true;
  EXPECT_TRUE(absl::IsUnavailable(loop().tick(10)));
  EXPECT_TRUE(policy_.inputs.empty());
  connector_.fail_current = false;
  connector_.fail_scale = true;
  source_.script.push_back(sample(1));
  policy_.answer = {1, 2};
  EXPECT_TRUE(absl::IsPermissionDenied(loop().tick(20)));
  EXPECT_NE(lines_[1]["changes"][0]["error"].get<std::string>().find("no rbac"), std::string::npos);
  const std::string text = metricsText();
  EXPECT_NE(text.find("tandem:planner_errors_total{stage=\"connector\"} 1"), std::string::npos) << text;
  EXPECT_NE(text.find("tandem:planner_errors_total{stage=\"scale\"} 1"), std::string::npos) << text;
}

TEST_F(PlannerLoopTest, RunsOnItsOwnTimerEveryInterval) {
  options_.interval = std::chrono::milliseconds(20);
  for (int i = 0; i < 3; ++i) source_.script.push_back(sample(i));
  policy_.answer = {1, 1};
  loop().start();
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < end) {
    {
      // the loop's ticks log from the timer thread; read the count through tick's lock.
      if (metricsText().find("tandem:planner_decisions_total 3") != std::string::npos) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  loop().stop();
  EXPECT_NE(metricsText().find("tandem:planner_decisions_total 3"), std::string::npos);
}

// The live planner (RouterMetricsSource → PlannerLoop → SlaPolicy) against
// a router's /metrics on a real HTTP server, the router's own ServingMetrics
// counting the requests; `export_mix` false serves it without the
// prompt-length mix, as a router from before it exported one.
class LiveMixTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = http::testing::startServer({}, [this](http::HttpRequest, http::ResponseWriterPtr writer) {
      writer->respond(200, {{"Content-Type", "text/plain"}}, scrapeBody());
    });
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override { server_->shutdown(std::chrono::milliseconds(0)); }

  std::string scrapeBody() {
    std::lock_guard lock(mu_);
    const std::string text = router_->render();
    if (export_mix_) return text;
    std::istringstream lines(text);
    std::string kept;
    for (std::string line; std::getline(lines, line);) {
      if (line.find("tandem:prompt_mix_") == std::string::npos) absl::StrAppend(&kept, line, "\n");
    }
    return kept;
  }

  // a router that answered `n` requests of `prompt` tokens (none cached)
  // and 20 generated each.
  void finishRequests(int n, int prompt) {
    std::lock_guard lock(mu_);
    for (int i = 0; i < n; ++i) {
      router_->countPrompt(prompt, 0, 20);
      router_->observeE2e(1);
      router_->countRequest("completions", 200);
    }
  }

  // the workers the sla policy wants after one 10 s interval of 100 req/s:
  // 97.2% of 1000-token prompts, 2% of 15 000 and 0.8% of 30 000 (mean
  // 1512), on a worker prefilling 10k tokens/s, TTFT SLO 2 s.
  RoleCounts decideAfterALongTailedInterval(bool export_mix) {
    {
      std::lock_guard lock(mu_);
      export_mix_ = export_mix;
      router_ = std::make_unique<router::ServingMetrics>();
    }
    RouterMetricsSource source({.metrics_url = absl::StrCat("http://127.0.0.1:", server_->port(), "/metrics")});
    ConstantPredictor predictor;
    SlaPolicy policy(slaConfig());
    DryRunConnector connector({1, 1}, [](const std::string&) {});
    PlannerLoopOptions options;
    options.bounds = {.min = {1, 1}, .max = {1000, 1000}, .max_total = 2000};
    options.log = [this](const std::string& line) { lines_.push_back(nlohmann::json::parse(line)); };
    PlannerLoop loop(options, &source, &predictor, &policy, &connector, nullptr);
    EXPECT_TRUE(absl::IsFailedPrecondition(loop.tick(0)));  // the baseline
    finishRequests(972, 1000);
    finishRequests(20, 15000);
    finishRequests(8, 30000);
    const absl::Status ticked = loop.tick(10);
    EXPECT_TRUE(ticked.ok()) << ticked;
    EXPECT_EQ(lines_.back()["observed"]["input_tokens"], 1512) << lines_.back();
    return *connector.current();
  }

  // a TTFT SLO of 2 s; a worker that prefills 10k tokens/s at any length
  // and decodes a step in 10 ms + 0.1 ms per sequence.
  static PolicyConfig slaConfig() {
    PolicyConfig config;
    config.ttft_slo_ms = 2000;
    absl::StatusOr<WorkerProfile> profile = WorkerProfile::create(
        {{100, 10000}, {100000, 10000}},
        {{1, 100, 10.1}, {1, 100000, 10.1}, {1001, 100, 110.1}, {1001, 100000, 110.1}}, 1e6, 1024);
    EXPECT_TRUE(profile.ok()) << profile.status();
    if (profile.ok()) config.profile = *profile;
    return config;
  }

  std::mutex mu_;
  bool export_mix_ = true;                         // guarded by mu_
  std::unique_ptr<router::ServingMetrics> router_;  // guarded by mu_
  http::HttpServerPtr server_;
  std::vector<nlohmann::json> lines_;
};

TEST_F(LiveMixTest, ALongTailedMixMeasuredLiveNeedsMorePrefillThanItsMeanPrompt) {
  const RoleCounts means = decideAfterALongTailedInterval(false);
  EXPECT_EQ(lines_.back()["reason"].get<std::string>().find("prompt-length mix"), std::string::npos);
  const RoleCounts mixed = decideAfterALongTailedInterval(true);
  EXPECT_NE(lines_.back()["reason"].get<std::string>().find("prompt-length mix"), std::string::npos)
      << lines_.back();
  // the mix's long prompts wait in the queue too: more prefill workers than
  // the mean prompt's M/M/N, as the simulator sizes them.
  EXPECT_GT(mixed.prefill, means.prefill);
  // the same as sizing the same mix directly.
  PromptMix mix;
  for (int i = 0; i < 972; ++i) mix.add(1000, 1000, 20);
  for (int i = 0; i < 20; ++i) mix.add(15000, 15000, 20);
  for (int i = 0; i < 8; ++i) mix.add(30000, 30000, 20);
  EXPECT_EQ(mixed.prefill, SlaPolicy(slaConfig()).sizeForMix(100, mix).prefill);
}

TEST(ValidateBoundsTest, RefusesInconsistentBounds) {
  EXPECT_TRUE(validateBounds({.min = {0, 1}, .max = {2, 2}, .max_total = 4}).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(validateBounds({.min = {3, 1}, .max = {2, 2}, .max_total = 4})));
  EXPECT_TRUE(absl::IsInvalidArgument(validateBounds({.min = {-1, 1}, .max = {2, 2}, .max_total = 4})));
  EXPECT_TRUE(absl::IsInvalidArgument(validateBounds({.min = {2, 2}, .max = {2, 2}, .max_total = 3})));
}

}  // namespace
}  // namespace tandem::planner
