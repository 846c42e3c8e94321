// The planner simulator (bench/planner_sim): trace scaling, the simulated
// prefill and decode workers' timings, and whole runs with the planner in
// the loop on a trace slice and on a constructed burst.
#include "bench/planner_sim/planner_simulator.h"

#include <algorithm>
#include <optional>
#include <set>

#include "bench/planner_sim/foresight_policy.h"
#include "bench/planner_sim/scaled_trace.h"
#include "bench/planner_sim/sim_profile_model.h"
#include "bench/planner_sim/sim_prefill_worker.h"
#include "gtest/gtest.h"
#include "tests/test_paths.h"

namespace tandem::bench {
namespace {

using planner::RoleCounts;
using planner::WorkerProfile;

std::string traceFile(const std::string& name) { return tandem::testing::testDataDir() + "/traces/" + name; }

// prefills 1000 tokens/s at any length; a decode step is 10 ms + 1 ms per
// sequence at any context; 10 000 KV tokens, batches of up to 4.
WorkerProfile flatProfile() {
  absl::StatusOr<WorkerProfile> p = WorkerProfile::create(
      {{1, 1000}, {100000, 1000}}, {{1, 1, 11}, {1, 100000, 11}, {101, 1, 111}, {101, 100000, 111}}, 10000, 4);
  EXPECT_TRUE(p.ok()) << p.status();
  return *p;
}

SimRequest request(double arrival, int64_t prompt, int64_t output, uint64_t salt) {
  SimRequest r;
  r.arrival_s = arrival;
  r.prompt_tokens = prompt;
  r.output_tokens = output;
  kvcache::BlockHash parent = 0;
  for (int64_t b = 0; b < prompt / 16; ++b) {
    const int32_t t[2] = {static_cast<int32_t>(salt), static_cast<int32_t>(b)};
    parent = kvcache::hashBlock(parent, t);
    r.hashes.push_back(parent);
  }
  return r;
}

TEST(ScaledTraceTest, ReplicasOverlayCopiesThatShareNoPrefixAndSpeedupCompressesTime) {
  SimTrace t;
  t.requests = {request(0, 64, 2, 1), request(10, 64, 2, 1), request(20, 64, 2, 2)};
  t.distinct_blocks = 8;
  const SimTrace x = scaleTrace(t, TraceScale{.replicas = 3, .jitter_s = 1, .speedup = 2});
  ASSERT_EQ(x.requests.size(), 9u);
  EXPECT_EQ(x.distinct_blocks, 24);
  EXPECT_EQ(x.requests.front().arrival_s, 0);
  for (size_t i = 1; i < x.requests.size(); ++i) EXPECT_LE(x.requests[i - 1].arrival_s, x.requests[i].arrival_s);
  EXPECT_LE(x.requests.back().arrival_s, 10);  // within the 20 s span (wrapped), twice as fast
  // the jitter only delays: no copy piles up at the start.
  EXPECT_EQ(std::count_if(x.requests.begin(), x.requests.end(),
                          [](const SimRequest& r) { return r.arrival_s == 0; }), 1);
  // copies of the same prompt start with three different hashes, one per copy.
  std::set<kvcache::BlockHash> firsts;
  for (const SimRequest& r : x.requests) firsts.insert(r.hashes[0]);
  EXPECT_EQ(firsts.size(), 6u);  // two distinct prompts x three copies
}

TEST(SimPrefillWorkerTest, PrefillsInArrivalOrderAtTheProfilesRate) {
  const WorkerProfile profile = flatProfile();
  SimPrefillWorker p("p:1", &profile);
  p.enqueue(7, 500, 1000, 1.0);  // 0.5 s
  p.enqueue(8, 250, 250, 1.2);   // after it: 0.25 s
  EXPECT_EQ(p.queuedTokens(), 750);
  EXPECT_DOUBLE_EQ(p.nextEventTime(), 1.5);
  std::vector<std::pair<int, double>> done;
  p.advanceTo(10, done);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0], (std::pair<int, double>{7, 1.5}));
  EXPECT_EQ(done[1], (std::pair<int, double>{8, 1.75}));
  EXPECT_TRUE(p.idle());
}

TEST(SimProfileWorkerTest, DecodesInStepsOfTheProfilesItlAndBatchesAtMostMaxBatch) {
  const WorkerProfile profile = flatProfile();
  router::cluster::KvIndex index;
  SimWorker d("d:1", profileModel(profile, 16), &index);
  std::vector<SimRequest> reqs;
  for (int i = 0; i < 5; ++i) reqs.push_back(request(0, 32, 11, 100 + i));
  // five arrive with their KV at t = 0: the first starts a step at once, the
  // others join at its end (continuous batching), as far as the batch of 4 allows.
  for (int i = 0; i < 5; ++i) d.addRemote(i, &reqs[i], 0);
  EXPECT_EQ(d.running(), 1);
  EXPECT_EQ(d.waiting(), 4);
  // the prompts' blocks are announced to the router's index.
  EXPECT_EQ(index.leadingBlocks("d:1", reqs[0].hashes), 2);
  EXPECT_EQ(d.cachedTokens(reqs[0]), 32);
  std::vector<SimOutcome> out;
  d.advanceTo(0.011, out);
  EXPECT_EQ(d.running(), 4);
  EXPECT_EQ(d.waiting(), 1);
  d.advanceTo(1e9, out);
  // each has 10 tokens to decode: the first one step alone (11 ms) and 9 in
  // a batch of 4 (14 ms each); the next three their last in a batch with the
  // fifth; the fifth its other 9 alone.
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0].request, 0);
  EXPECT_NEAR(out[0].time, 0.011 + 9 * 0.014, 1e-9);
  for (int i = 1; i < 4; ++i) {
    EXPECT_EQ(out[i].kind, SimOutcome::kFinished);
    EXPECT_NEAR(out[i].time, 0.137 + 0.014, 1e-9);
  }
  EXPECT_EQ(out[4].request, 4);
  EXPECT_NEAR(out[4].time, 0.151 + 9 * 0.011, 1e-9);
  EXPECT_TRUE(d.idle());
}

TEST(SimProfileWorkerTest, PrefillsShortPromptsItselfBeforeDecodingThem) {
  const WorkerProfile profile = flatProfile();
  router::cluster::KvIndex index;
  SimWorker d("d:1", profileModel(profile, 16), &index);
  const SimRequest r = request(0, 40, 3, 9);
  d.addLocal(0, &r, 40, 0);  // 40 ms of prefill, then 2 steps of 11 ms
  std::vector<SimOutcome> out;
  d.advanceTo(1e9, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].kind, SimOutcome::kFirstToken);
  EXPECT_NEAR(out[0].time, 0.04, 1e-9);
  EXPECT_EQ(out[1].kind, SimOutcome::kFinished);
  EXPECT_NEAR(out[1].time, 0.062, 1e-9);
}

PlannerSimOptions smallCluster() {
  PlannerSimOptions o;
  o.interval_s = 5;
  o.cold_start_s = 10;
  o.ttft_slo_ms = 2000;
  o.itl_slo_ms = 50;
  o.jobs = 1;
  return o;
}

// the repository's Mooncake excerpt, four overlaid copies, and the shipped
// MI300X profile: a small cluster's worth of traffic.
struct TraceSlice {
  SimTrace trace;
  WorkerProfile profile;
};
std::optional<TraceSlice> mooncakeSlice() {
  absl::StatusOr<SimTrace> raw = loadSimTrace("mooncake:" + traceFile("mooncake_conversation_first400.jsonl"), 64);
  EXPECT_TRUE(raw.ok()) << raw.status();
  absl::StatusOr<WorkerProfile> profile =
      WorkerProfile::load(tandem::testing::sourceDir() + "/planner/profiles/mi300x-llama3-8b.json");
  EXPECT_TRUE(profile.ok()) << profile.status();
  if (!raw.ok() || !profile.ok()) return std::nullopt;
  return TraceSlice{scaleTrace(*raw, TraceScale{.replicas = 4, .speedup = 1}), *profile};
}

TEST(ScaledTraceTest, JitteredCopiesWrapSoTheStartDoesNotRampUp) {
  // one request a second for 1000 s, 20 copies jittered by up to 200 s:
  // the first 100 s hold as many arrivals as any other 100 s.
  SimTrace t;
  for (int i = 0; i < 1000; ++i) t.requests.push_back(request(i, 64, 2, i + 1));
  const SimTrace x = scaleTrace(t, TraceScale{.replicas = 20, .jitter_s = 100});
  ASSERT_EQ(x.requests.size(), 20000u);
  std::vector<int> per_window(10);
  for (const SimRequest& r : x.requests) ++per_window[std::min(9, static_cast<int>(r.arrival_s / 100))];
  for (int w = 0; w < 10; ++w) EXPECT_NEAR(per_window[w], 2000, 200) << "window " << w;
}

TEST(PlannerSimulatorTest, RunsEveryPolicyOnATraceSliceAndReportsTheJsonShape) {
  const std::optional<TraceSlice> slice = mooncakeSlice();
  ASSERT_TRUE(slice.has_value());
  const SimTrace& trace = slice->trace;
  const WorkerProfile& profile = slice->profile;
  absl::StatusOr<PlannerSimResult> result = simulatePlanner(trace, profile, smallCluster());
  ASSERT_TRUE(result.ok()) << result.status();
  const nlohmann::json j = result->toJson();
  ASSERT_TRUE(j["policies"].is_object());
  for (const char* policy : {"sla", "load", "static"}) {
    ASSERT_TRUE(j["policies"].contains(policy)) << policy;
    const nlohmann::json& p = j["policies"][policy];
    for (const char* key : {"ttft_attainment", "itl_attainment", "gpu_hours"}) {
      ASSERT_TRUE(p[key].is_number_float()) << policy << " " << key;
      EXPECT_GE(p[key].get<double>(), 0) << policy << " " << key;
    }
    EXPECT_LE(p["ttft_attainment"].get<double>(), 1);
    EXPECT_LE(p["itl_attainment"].get<double>(), 1);
    EXPECT_GT(p["gpu_hours"].get<double>(), 0);
    ASSERT_TRUE(p["scale_events"].is_number_integer()) << policy;
    ASSERT_TRUE(p["max_workers"].is_number_integer()) << policy;
    EXPECT_GE(p["max_workers"].get<int>(), 2) << policy;
    EXPECT_FALSE(p["timeline"]["time_s"].empty()) << policy;
  }
  // static never changes its counts, sized for the slice's peak.
  const PlannerPolicyResult& fixed = result->policies[2];
  EXPECT_EQ(fixed.scale_events, 0);
  EXPECT_EQ(fixed.max_workers, result->static_counts.total());
  for (const PlannerPolicyResult& p : result->policies) EXPECT_EQ(p.finished, result->requests) << p.policy;
  EXPECT_NE(result->toSvg().find("<svg"), std::string::npos);
  // the bound runs beside them; savings are read as a share of its own.
  ASSERT_TRUE(j["policies"].contains("foresight"));
  ASSERT_EQ(result->policies.back().policy, "foresight");
  const double fixed_h = j["policies"]["static"]["gpu_hours"], bound_h = j["policies"]["foresight"]["gpu_hours"];
  for (const char* policy : {"sla", "load", "static", "foresight"}) {
    const nlohmann::json& f = j["policies"][policy]["fraction_of_possible_savings"];
    if (fixed_h <= bound_h) {
      EXPECT_TRUE(f.is_null()) << policy;
      continue;
    }
    ASSERT_TRUE(f.is_number()) << policy;
    const double h = j["policies"][policy]["gpu_hours"];
    EXPECT_NEAR(f.get<double>(), (fixed_h - h) / (fixed_h - bound_h), 1e-9) << policy;
  }
  EXPECT_GE(j["foresight_headroom"]["prefill"].get<double>(), 1);
  EXPECT_GE(j["foresight_headroom"]["decode"].get<double>(), 1);
}

TEST(PlannerSimulatorTest, RecordsEachDecisionAsTheLivePlannerLogsIt) {
  const std::optional<TraceSlice> slice = mooncakeSlice();
  ASSERT_TRUE(slice.has_value());
  const SimTrace& trace = slice->trace;
  const WorkerProfile& profile = slice->profile;
  PlannerSimOptions options = smallCluster();
  options.policies = {"sla", "load"};
  options.foresight = false;
  options.record_decisions = true;
  absl::StatusOr<PlannerSimResult> result = simulatePlanner(trace, profile, options);
  ASSERT_TRUE(result.ok()) << result.status();
  for (const PlannerPolicyResult& p : result->policies) {
    ASSERT_EQ(p.decisions.size(), p.timeline.size()) << p.policy;
    nlohmann::json last;
    for (size_t i = 0; i < p.decisions.size(); ++i) {
      const nlohmann::json line = nlohmann::json::parse(p.decisions[i]);
      EXPECT_EQ(line["policy"], p.policy);
      EXPECT_DOUBLE_EQ(line["time_s"].get<double>(), p.timeline[i].time_s) << p.policy << " " << i;
      for (const char* key : {"observed", "predicted", "current", "desired"}) {
        ASSERT_TRUE(line[key].is_object()) << p.policy << " " << key;
      }
      EXPECT_TRUE(line["observed"]["request_rate"].is_number()) << p.policy;
      EXPECT_TRUE(line["reason"].is_string()) << p.policy;
      // each line's counts are the ones the last decision left.
      if (!last.is_null()) EXPECT_EQ(line["current"], last["desired"]) << p.policy << " " << i;
      last = line;
    }
  }
  // without asking, none are kept.
  options.record_decisions = false;
  absl::StatusOr<PlannerSimResult> quiet = simulatePlanner(trace, profile, options);
  ASSERT_TRUE(quiet.ok()) << quiet.status();
  for (const PlannerPolicyResult& p : quiet->policies) EXPECT_TRUE(p.decisions.empty()) << p.policy;
}

planner::LoadSample arrivals(double rate) {
  planner::LoadSample s;
  s.interval_s = 10;
  s.request_rate = rate;
  s.mean_input_tokens = 2000;
  s.mean_output_tokens = 100;
  return s;
}

TEST(ForesightPolicyTest, AsksNowForTheMostTheIntervalsThroughAColdStartNeed) {
  absl::StatusOr<WorkerProfile> profile =
      WorkerProfile::load(tandem::testing::sourceDir() + "/planner/profiles/mi300x-llama3-8b.json");
  ASSERT_TRUE(profile.ok()) << profile.status();
  planner::PolicyConfig config;
  config.interval_s = 10;
  config.cold_start_s = 20;
  config.profile = *profile;
  const planner::SlaPolicy sizing(config);
  // quiet, quiet, quiet, a burst at interval 3, quiet.
  const std::vector<planner::LoadSample> future = {arrivals(1), arrivals(1), arrivals(1), arrivals(100), arrivals(1)};
  const int quiet = sizing.sizeForInterval(future[0]).prefill;
  const int burst = sizing.sizeForInterval(future[3]).prefill;
  ASSERT_GT(burst, quiet + 2);
  ForesightPolicy bound(future, config);
  // at 0 s it covers intervals 0-2 (a worker asked for now serves from 20 s):
  // quiet; at 10 s, intervals 1-3: the burst's workers, a cold start ahead.
  EXPECT_EQ(bound.neededFrom(0).prefill, quiet);
  EXPECT_EQ(bound.neededFrom(10).prefill, burst);
  EXPECT_EQ(bound.neededFrom(30).prefill, burst);
  EXPECT_EQ(bound.neededFrom(40).prefill, quiet);  // after it: let go at once
  EXPECT_EQ(bound.neededFrom(60).prefill, 0);      // past the trace
  // a headroom multiplies each interval's counts (rounded).
  ForesightPolicy roomy(future, config, Headroom{.prefill = 1.5, .decode = 1});
  EXPECT_EQ(roomy.neededFrom(30).prefill, static_cast<int>(std::floor(burst * 1.5 + 0.5)));
  planner::PolicyInputs in;
  in.observed.time_s = 10;
  in.bounds = {.min = {1, 1}, .max = {4, 4}, .max_total = 8};
  EXPECT_EQ(bound.decide(in).desired.prefill, 4);  // within the bounds
}

TEST(PlannerSimulatorTest, ScalesUpForABurstAndDrainsAfterItWithoutLosingARequest) {
  // 20 s of quiet traffic, 60 s at 40x the rate, then quiet again for 2 min.
  SimTrace trace;
  trace.name = "burst";
  uint64_t salt = 0;
  auto add = [&](double from, double to, double rate) {
    for (double t = from; t < to; t += 1 / rate) trace.requests.push_back(request(t, 2000, 100, salt++));
  };
  add(0, 20, 1);
  add(20, 80, 40);
  add(80, 200, 1);
  absl::StatusOr<WorkerProfile> profile =
      WorkerProfile::load(tandem::testing::sourceDir() + "/planner/profiles/mi300x-llama3-8b.json");
  ASSERT_TRUE(profile.ok()) << profile.status();
  PlannerSimOptions o = smallCluster();
  o.ttft_slo_ms = 500;
  o.policies = {"sla", "load"};
  absl::StatusOr<PlannerSimResult> result = simulatePlanner(trace, *profile, o);
  ASSERT_TRUE(result.ok()) << result.status();
  for (const PlannerPolicyResult& p : result->policies) {
    if (p.policy == "foresight") continue;
    EXPECT_EQ(p.finished, result->requests) << p.policy << ": a drained worker lost requests";
    EXPECT_GT(p.max_prefill, 1) << p.policy << " did not scale prefill up";
    EXPECT_GE(p.scale_events, 2) << p.policy;
    // back down by the end of the quiet tail.
    EXPECT_LT(p.timeline.back().prefill, p.max_prefill) << p.policy << " did not scale down";
  }
  // the bound had the burst's workers ready when it came, and meets the SLO
  // on fewer GPU-hours than the policies that learned of it late.
  const PlannerPolicyResult& bound = result->policies.back();
  ASSERT_EQ(bound.policy, "foresight");
  EXPECT_EQ(bound.finished, result->requests);
  EXPECT_GE(bound.ttft_attainment, 0.99);
  EXPECT_GE(bound.itl_attainment, 0.99);
  for (size_t i = 0; i + 1 < result->policies.size(); ++i) {
    EXPECT_LT(bound.gpu_hours, result->policies[i].gpu_hours) << result->policies[i].policy;
  }
}

}  // namespace
}  // namespace tandem::bench
