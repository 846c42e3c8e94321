// The routing policies' decisions on constructed cluster states, through
// the real RoutePlanner, KvIndex and WorkerLoadModel.
#include <map>
#include <set>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "proto/convert/worker_enum_names.h"
#include "router/cluster/dynamo_policy.h"
#include "router/cluster/kv_policy.h"
#include "router/cluster/route_planner.h"

namespace tandem::router::cluster {
namespace {

constexpr int kBlock = 4;

WorkerState policyWorker(const std::string& address, int running = 0, int64_t queued = 0,
                   const std::string& role = "decode") {
  WorkerState w;
  w.address = address;
  w.has_info = true;
  w.healthy = true;
  w.has_stats = true;
  w.info.set_worker_id(address);
  w.info.set_address(address);
  w.info.set_role(*rpc::parseWorkerRole(role));
  w.info.set_block_size(kBlock);
  w.info.set_num_blocks(100000);
  w.info.set_max_model_len(1 << 20);
  w.stats.set_num_running(running);
  w.stats.set_num_free_blocks(100000);
  w.stats.set_num_prefill_tokens_queued(queued);
  return w;
}

// a prompt of `n` tokens; `salt` changes all of it.
std::vector<int32_t> saltedPrompt(int n, int salt = 0) {
  std::vector<int32_t> p(n);
  for (int i = 0; i < n; ++i) p[i] = i + 1 + salt * 100000;
  return p;
}

// `address` holds the first `blocks` blocks of `p` on `tier`.
void hold(KvIndex& index, const std::string& address, const std::vector<int32_t>& p, int blocks,
          int tier = 0) {
  const std::vector<kvcache::BlockHash> hashes = kvcache::blockHashes(p, kBlock);
  for (int i = 0; i < blocks; ++i) {
    tandem::v1::KvEvent e;  // unnumbered
    e.mutable_stored()->set_hash(hashes[i]);
    e.mutable_stored()->set_tier(tier);
    index.applyEvent(address, e);
  }
}

RoutePlannerOptions options(const std::string& policy) {
  RoutePlannerOptions o;
  o.policy = policy;
  o.seed = 7;
  o.load.default_prefill_tokens_per_s = 1000;
  o.load.default_decode_s_per_step = 0.01;
  return o;
}

std::string route(RoutePlanner& planner, const std::vector<int32_t>& p,
                  const std::vector<WorkerState>& workers, uint64_t key = 0, double now = 0) {
  RouteQuery q;
  q.prompt = p;
  q.max_tokens = 8;
  q.key = key;
  q.now_s = now;
  absl::StatusOr<RouteDecision> d = planner.plan(q, workers, {}, {});
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? d->decode_address : "";
}

TEST(KvPolicyTest, GoesWhereThePrefixIsCachedWhenLoadsAreEqual) {
  KvIndex index;
  const std::vector<int32_t> p = saltedPrompt(400);
  hold(index, "d2", p, 90);
  RoutePlanner planner(options("kv"), &index);
  const std::vector<WorkerState> workers = {policyWorker("d1"), policyWorker("d2"), policyWorker("d3")};
  for (int i = 0; i < 20; ++i) EXPECT_EQ(route(planner, p, workers), "d2");
  RouteQuery q;
  q.prompt = p;
  absl::StatusOr<RouteDecision> d = planner.plan(q, workers, {}, {});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->predicted_cached_tokens, 360);
  EXPECT_EQ(d->outcome, RouteOutcome::kCacheHit);
}

TEST(KvPolicyTest, AHotPrefixSpreadsWhenItsHolderQueuesUp) {
  KvIndex index;
  const std::vector<int32_t> p = saltedPrompt(400);
  hold(index, "d1", p, 100);  // d1 holds it all: 0 tokens to prefill
  RoutePlanner planner(options("kv"), &index);
  // d1 has 2000 tokens queued (2 s at 1000 tok/s), d2 is idle: prefilling
  // the 400 tokens there (0.4 s) is faster.
  std::vector<WorkerState> workers = {policyWorker("d1", 0, 2000), policyWorker("d2")};
  absl::StatusOr<RouteDecision> d = planner.plan(RouteQuery{.prompt = p, .max_tokens = 8}, workers, {}, {});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->decode_address, "d2");
  EXPECT_EQ(d->outcome, RouteOutcome::kSpread);
  // with a short queue the holder wins again.
  workers[0] = policyWorker("d1", 0, 100);
  EXPECT_EQ(route(planner, p, workers), "d1");
}

TEST(KvPolicyTest, RequestsOfOneHotPrefixSpreadAsTheRouterAddsLoad) {
  // every request shares its first 32 blocks (the Mooncake trace's first
  // hash id), then differs; no Stats arrive between them.
  KvIndex index;
  const std::vector<int32_t> shared = saltedPrompt(128, 1);
  for (const char* w : {"d1"}) hold(index, w, shared, 32);
  RoutePlanner planner(options("kv"), &index);
  const std::vector<WorkerState> workers = {policyWorker("d1"), policyWorker("d2"), policyWorker("d3"), policyWorker("d4")};
  std::map<std::string, int> counts;
  for (int i = 0; i < 40; ++i) {
    std::vector<int32_t> p = shared;
    const std::vector<int32_t> tail = saltedPrompt(1000, 10 + i);
    p.insert(p.end(), tail.begin(), tail.end());
    ++counts[route(planner, p, workers, i + 1, 0.0)];
  }
  ASSERT_EQ(counts.size(), 4u);
  for (const auto& [w, n] : counts) EXPECT_GE(n, 8) << w;
}

TEST(KvPolicyTest, PacedRequestsWithoutStatsDoNotPileOntoOneWorker) {
  // AMD Infera #103: between paced requests the reported load is zero; the
  // router's own decisions must count at once.
  KvIndex index;
  RoutePlanner planner(options("kv"), &index);
  const std::vector<WorkerState> workers = {policyWorker("d1"), policyWorker("d2"), policyWorker("d3")};
  std::map<std::string, int> counts;
  for (int i = 0; i < 30; ++i) ++counts[route(planner, saltedPrompt(200, i), workers, i + 1, i * 0.01)];
  ASSERT_EQ(counts.size(), 3u);
  for (const auto& [w, n] : counts) EXPECT_EQ(n, 10) << w;
}

TEST(KvPolicyTest, AStalledWorkerIsSeenAsSlowAndAvoided) {
  KvIndex index;
  const std::vector<int32_t> p = saltedPrompt(400);
  hold(index, "d1", p, 100);
  RoutePlanner planner(options("kv"), &index);
  const std::vector<WorkerState> workers = {policyWorker("d1"), policyWorker("d2")};
  // a request went to d1 at t=0 (100 tokens to prefill: 0.1 s expected)
  // and has no first token at t=10 s: d1 is stalled.
  planner.loadModel().onRouted(999, "d1", 100, 10, 0.0);
  EXPECT_LT(planner.loadModel().load("d1", 10.0).prefill_tokens_per_s, 20);
  // d1 holds the whole prompt, yet d2 is chosen.
  EXPECT_EQ(route(planner, p, workers, 0, 10.0), "d2");
  // d1 answers again: its first token comes, the rate recovers with samples.
  planner.firstToken(999, 10.0);
  planner.finished(999, 1, 10.0);
  EXPECT_EQ(route(planner, p, workers, 0, 10.0), "d1");
}

TEST(KvPolicyTest, LearnsAWorkersPrefillRateFromFirstTokens) {
  WorkerLoadModel model(WorkerLoadModelOptions{.default_prefill_tokens_per_s = 1000});
  // d1 prefills 4000 tokens/s: each 400-token request answers in 0.1 s.
  for (uint64_t k = 1; k <= 30; ++k) {
    const double t = static_cast<double>(k);
    model.onRouted(k, "d1", 400, 10, t);
    model.onFirstToken(k, t + 0.1);
    model.onFinished(k, 11, t + 0.2);  // 10 steps in 0.1 s
  }
  const WorkerLoad load = model.load("d1", 40);
  EXPECT_NEAR(load.prefill_tokens_per_s, 4000, 100);
  EXPECT_NEAR(load.decode_s_per_step, 0.01, 0.001);
  EXPECT_EQ(load.running, 0);
  EXPECT_EQ(load.queued_prefill_tokens, 0);
}

TEST(KvPolicyTest, WithoutReuseItPicksTheShortestPrefillQueue) {
  KvIndex index;
  RoutePlanner planner(options("kv"), &index);
  const std::vector<WorkerState> workers = {policyWorker("d1", 1, 900), policyWorker("d2", 4, 100),
                                            policyWorker("d3", 1, 500)};
  EXPECT_EQ(route(planner, saltedPrompt(300), workers), "d2");
}

TEST(KvPolicyTest, ADeviceHitBeatsTheSameHitOnDisk) {
  KvIndex index;
  const std::vector<int32_t> p = saltedPrompt(400);
  hold(index, "d1", p, 100, /*tier=*/2);
  hold(index, "d2", p, 100, /*tier=*/0);
  RoutePlannerOptions o = options("kv");
  o.costs.disk_onboard_s_per_block = 0.01;
  RoutePlanner planner(o, &index);
  const std::vector<WorkerState> workers = {policyWorker("d1"), policyWorker("d2")};
  for (int i = 0; i < 10; ++i) EXPECT_EQ(route(planner, p, workers), "d2");
  // a disk hit still beats computing the prompt (400 tokens: 0.4 s > 100 x 1 ms).
  o.costs.disk_onboard_s_per_block = 0.001;
  RoutePlanner cheap_disk(o, &index);
  EXPECT_EQ(route(cheap_disk, p, {policyWorker("d1"), policyWorker("d3")}), "d1");
}

TEST(KvPolicyTest, TiesAreBrokenAtRandomAndATemperatureSamples) {
  KvIndex index;
  RoutePlanner planner(options("kv"), &index);
  const std::vector<WorkerState> workers = {policyWorker("d1"), policyWorker("d2"), policyWorker("d3")};
  std::set<std::string> seen;
  for (int i = 0; i < 60; ++i) seen.insert(route(planner, saltedPrompt(100), workers));  // no key: no load added
  EXPECT_EQ(seen.size(), 3u);
  // a temperature samples the worse ones too, the best most often.
  RoutePlannerOptions o = options("kv");
  o.costs.temperature = 0.5;
  RoutePlanner hot(o, &index);
  const std::vector<WorkerState> uneven = {policyWorker("d1", 0, 0), policyWorker("d2", 0, 3000)};
  std::map<std::string, int> counts;
  for (int i = 0; i < 400; ++i) ++counts[route(hot, saltedPrompt(100), uneven)];
  EXPECT_GT(counts["d1"], counts["d2"]);
  EXPECT_GT(counts["d2"], 0);
}

TEST(KvPolicyTest, ChoosesThePrefillWorkerTheSameWayCountingItsCache) {
  KvIndex index;
  const std::vector<int32_t> p = saltedPrompt(400);
  hold(index, "p2", p, 100);  // p2 holds the prompt; p1 has a shorter queue
  RoutePlannerOptions o = options("kv");
  o.max_local_prefill_tokens = 8;
  o.max_prefill_queue_tokens = 1 << 20;
  RoutePlanner planner(o, &index);
  const std::vector<WorkerState> workers = {policyWorker("d1"), policyWorker("p1", 0, 0, "prefill"),
                                            policyWorker("p2", 0, 200, "prefill")};
  absl::StatusOr<RouteDecision> d = planner.plan(RouteQuery{.prompt = p, .max_tokens = 8}, workers, {}, {});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->decode_address, "d1");
  EXPECT_EQ(d->prefill_address, "p2");
  EXPECT_EQ(d->predicted_cached_tokens, 400);
}

TEST(KvPolicyTest, ShedsWhenNoWorkerCanMeetTheTtftSlo) {
  KvIndex index;
  RoutePlannerOptions o = options("kv");
  o.ttft_slo_s = 1.0;
  RoutePlanner planner(o, &index);
  // 1000 tok/s: 600 queued + 300 = 0.9 s (+ a step) meets it; 2000 queued does not.
  EXPECT_EQ(route(planner, saltedPrompt(300), {policyWorker("d1", 0, 2000), policyWorker("d2", 0, 600)}), "d2");
  absl::StatusOr<RouteDecision> d = planner.plan(RouteQuery{.prompt = saltedPrompt(300), .max_tokens = 8},
                                                 {policyWorker("d1", 0, 2000), policyWorker("d2", 0, 1500)}, {}, {});
  EXPECT_TRUE(absl::IsResourceExhausted(d.status())) << d.status();
}

TEST(DynamoPolicyTest, WeighsUncachedPrefillBlocksAgainstActiveDecodeBlocks) {
  const RoutingCosts costs;
  DynamoPolicy dynamo(costs);
  RouteAsk ask{.prompt_tokens = 400, .prompt_blocks = 100, .block_size = 4, .max_tokens = 8};
  std::string a = "a", b = "b";
  RouteCandidate cached{.address = &a, .cached = {.device = 60, .host = 80, .any = 100}};
  cached.load.active_blocks = 50;
  RouteCandidate cold{.address = &b};
  // 1.0 x (100 - (60 + 0.75 x 20 + 0.25 x 20)) + 50 + 100 = 170; cold: 100 + 0 + 100 = 200.
  EXPECT_DOUBLE_EQ(dynamo.cost(ask, cached), 170);
  EXPECT_DOUBLE_EQ(dynamo.cost(ask, cold), 200);
  std::mt19937_64 rng(1);
  const std::vector<RouteCandidate> both = {cached, cold};
  EXPECT_EQ(dynamo.choose(ask, both, rng), 0u);
  std::vector<RouteCandidate> busy = both;
  busy[0].load.active_blocks = 81;  // 201 > 200
  EXPECT_EQ(dynamo.choose(ask, busy, rng), 1u);
}

TEST(LoadPoliciesTest, LeastLoadedRoundRobinRandomAndPowerOfTwo) {
  KvIndex index;
  const std::vector<WorkerState> workers = {policyWorker("d1", 3), policyWorker("d2", 1), policyWorker("d3", 2)};
  RoutePlanner least(options("least_loaded"), &index);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(route(least, saltedPrompt(10), workers), "d2");
  RoutePlanner rr(options("round_robin"), &index);
  std::vector<std::string> order;
  for (int i = 0; i < 6; ++i) order.push_back(route(rr, saltedPrompt(10), workers));
  EXPECT_EQ(order, (std::vector<std::string>{"d1", "d2", "d3", "d1", "d2", "d3"}));
  RoutePlanner random(options("random"), &index);
  std::set<std::string> seen;
  for (int i = 0; i < 60; ++i) seen.insert(route(random, saltedPrompt(10), workers));
  EXPECT_EQ(seen.size(), 3u);
  // of any two, the less loaded: never the most loaded one.
  RoutePlanner p2(options("power_of_two"), &index);
  std::map<std::string, int> counts;
  for (int i = 0; i < 100; ++i) ++counts[route(p2, saltedPrompt(10), workers)];
  EXPECT_EQ(counts["d1"], 0);
  EXPECT_GT(counts["d2"], counts["d3"]);
}

TEST(RoutingPolicyTest, UnknownPolicyNamesAreRefused) {
  absl::StatusOr<std::unique_ptr<RoutePlanner>> p = RoutePlanner::create(options("fastest"), nullptr);
  EXPECT_TRUE(absl::IsInvalidArgument(p.status()));
  EXPECT_NE(p.status().message().find("power_of_two"), std::string::npos);
  for (const std::string& name : routingPolicyNames()) {
    absl::StatusOr<std::unique_ptr<RoutePlanner>> ok = RoutePlanner::create(options(name), nullptr);
    ASSERT_TRUE(ok.ok()) << name;
    EXPECT_EQ((*ok)->policyName(), name);
  }
}

}  // namespace
}  // namespace tandem::router::cluster
