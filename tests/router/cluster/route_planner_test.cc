#include "router/cluster/route_planner.h"

#include "gtest/gtest.h"
#include "proto/convert/worker_enum_names.h"

namespace tandem::router::cluster {
namespace {

WorkerState plannerWorker(const std::string& address, const std::string& role, int running, int waiting,
                   int free_blocks, int64_t prefill_queued = 0) {
  WorkerState w;
  w.address = address;
  w.has_info = true;
  w.healthy = true;
  w.has_stats = true;
  w.info.set_worker_id(address);
  w.info.set_address(address);
  w.info.set_role(*rpc::parseWorkerRole(role));
  w.info.set_block_size(4);
  w.info.set_num_blocks(1000);
  w.info.set_max_model_len(4096);
  w.stats.set_num_running(running);
  w.stats.set_num_waiting(waiting);
  w.stats.set_num_free_blocks(free_blocks);
  w.stats.set_num_prefill_tokens_queued(prefill_queued);
  return w;
}

std::vector<int32_t> plannerPrompt(int n) {
  std::vector<int32_t> p(n);
  for (int i = 0; i < n; ++i) p[i] = i + 1;
  return p;
}

class RoutePlannerTest : public ::testing::Test {
 protected:
  RouteDecision plan(int prompt_len, const std::vector<WorkerState>& workers,
                     std::vector<std::string> exclude = {}) {
    absl::StatusOr<RouteDecision> d = planner_.plan(plannerPrompt(prompt_len), 16, workers, {}, exclude);
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? *d : RouteDecision{};
  }

  KvIndex index_;
  RoutePlanner planner_{RoutePlannerOptions{.max_local_prefill_tokens = 8,
                                            .max_prefill_queue_tokens = 100},
                        &index_};
};

TEST_F(RoutePlannerTest, PicksTheLeastLoadedDecodeWorker) {
  const std::vector<WorkerState> workers = {
      plannerWorker("d1", "decode", 3, 1, 500), plannerWorker("d2", "both", 1, 1, 100),
      plannerWorker("d3", "decode", 2, 2, 900), plannerWorker("p1", "prefill", 0, 0, 1000)};
  EXPECT_EQ(plan(4, workers).decode_address, "d2");
}

TEST_F(RoutePlannerTest, LeastLoadedBreaksLoadTiesByFreeBlocks) {
  const std::vector<WorkerState> workers = {plannerWorker("d1", "decode", 1, 0, 500),
                                            plannerWorker("d2", "decode", 1, 0, 900)};
  RoutePlanner least_loaded(RoutePlannerOptions{.policy = "least_loaded"}, &index_);
  EXPECT_EQ(least_loaded.plan(plannerPrompt(4), 16, workers, {}, {})->decode_address, "d2");
}

TEST_F(RoutePlannerTest, CountsTheRoutersOwnRequestsWhenStatsLag) {
  const std::vector<WorkerState> workers = {plannerWorker("d1", "decode", 0, 0, 500),
                                            plannerWorker("d2", "decode", 1, 0, 500)};
  absl::StatusOr<RouteDecision> d = planner_.plan(plannerPrompt(4), 16, workers, {{"d1", 5}}, {});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->decode_address, "d2");
}

TEST_F(RoutePlannerTest, SkipsUnhealthyAndExcludedWorkersUnlessNoneElse) {
  std::vector<WorkerState> workers = {plannerWorker("d1", "decode", 0, 0, 500),
                                      plannerWorker("d2", "decode", 5, 0, 500)};
  workers[0].healthy = false;
  EXPECT_EQ(plan(4, workers).decode_address, "d2");
  workers[0].healthy = true;
  EXPECT_EQ(plan(4, workers, {"d1"}).decode_address, "d2");
  EXPECT_EQ(plan(4, {workers[0]}, {"d1"}).decode_address, "d1");
}

TEST_F(RoutePlannerTest, NoDecodeWorkerIsUnavailable) {
  std::vector<WorkerState> workers = {plannerWorker("p1", "prefill", 0, 0, 500),
                                      plannerWorker("d1", "decode", 0, 0, 500)};
  workers[1].healthy = false;
  EXPECT_TRUE(absl::IsUnavailable(planner_.plan(plannerPrompt(4), 16, workers, {}, {}).status()));
}

TEST_F(RoutePlannerTest, PrefillsRemotelyOnlyAboveTheThreshold) {
  const std::vector<WorkerState> workers = {plannerWorker("d1", "decode", 0, 0, 500),
                                            plannerWorker("p1", "prefill", 0, 0, 500)};
  EXPECT_EQ(plan(8, workers).prefill_address, "");  // 8 uncached: not above 8
  const RouteDecision d = plan(9, workers);
  EXPECT_EQ(d.prefill_address, "p1");
  EXPECT_EQ(d.uncached_tokens, 9);
}

TEST_F(RoutePlannerTest, PrefillsLocallyWithoutAHealthyIdlePrefillWorker) {
  std::vector<WorkerState> workers = {plannerWorker("d1", "decode", 0, 0, 500),
                                      plannerWorker("p1", "prefill", 0, 0, 500, /*queued=*/100)};
  EXPECT_EQ(plan(20, workers).prefill_address, "");  // overloaded
  workers[1].stats.set_num_prefill_tokens_queued(0);
  workers[1].healthy = false;
  EXPECT_EQ(plan(20, workers).prefill_address, "");
  // a "both" worker is not a prefill worker.
  EXPECT_EQ(plan(20, {plannerWorker("d1", "both", 0, 0, 500)}).prefill_address, "");
}

TEST_F(RoutePlannerTest, DecodeWorkerPrefillsWhileThePrefillWorkersQueueWouldMissTheSlo) {
  // 8000 tokens/s: p1's 8000 queued tokens are 1 s, past the 0.5 s.
  RoutePlannerOptions options{.max_local_prefill_tokens = 8, .max_prefill_queue_tokens = 1 << 20};
  options.load.default_prefill_tokens_per_s = 8000;
  options.spill_prefill_over_s = 0.5;
  std::vector<WorkerState> workers = {plannerWorker("d1", "decode", 1, 0, 500),
                                      plannerWorker("p1", "prefill", 0, 0, 500, /*queued=*/8000)};
  RoutePlanner spill(options, &index_);
  const RouteDecision d = *spill.plan(plannerPrompt(40), 16, workers, {}, {});
  EXPECT_EQ(d.prefill_address, "");
  EXPECT_LT(d.predicted_ttft_s, 0.5);
  // p1 can meet it again: it prefills.
  workers[1].stats.set_num_prefill_tokens_queued(800);
  EXPECT_EQ(spill.plan(plannerPrompt(40), 16, workers, {}, {})->prefill_address, "p1");
  // d1 could not meet it either (its own queue): p1 keeps it, D keeps decoding.
  workers[1].stats.set_num_prefill_tokens_queued(8000);
  workers[0].stats.set_num_prefill_tokens_queued(8000);
  EXPECT_EQ(spill.plan(plannerPrompt(40), 16, workers, {}, {})->prefill_address, "p1");
  // without the option, p1 takes it however long its queue.
  workers[0].stats.set_num_prefill_tokens_queued(0);
  options.spill_prefill_over_s = 0;
  RoutePlanner no_spill(options, &index_);
  EXPECT_EQ(no_spill.plan(plannerPrompt(40), 16, workers, {}, {})->prefill_address, "p1");
}

TEST_F(RoutePlannerTest, PicksThePrefillWorkerWithTheShortestQueue) {
  const std::vector<WorkerState> workers = {plannerWorker("d1", "decode", 0, 0, 500),
                                            plannerWorker("p1", "prefill", 0, 0, 500, 50),
                                            plannerWorker("p2", "prefill", 0, 0, 500, 10)};
  EXPECT_EQ(plan(20, workers).prefill_address, "p2");
}

TEST_F(RoutePlannerTest, BlocksCachedOnDecodeWorkerReduceTheUncachedPart) {
  const std::vector<WorkerState> workers = {plannerWorker("d1", "decode", 0, 0, 500),
                                            plannerWorker("p1", "prefill", 0, 0, 500)};
  // d1 holds the first 3 blocks (12 tokens) of a 20-token prompt: 8 left.
  const std::vector<kvcache::BlockHash> hashes = kvcache::blockHashes(plannerPrompt(20), 4);
  for (int i = 0; i < 3; ++i) {
    tandem::v1::KvEvent e;
    e.set_event_id(i + 1);
    e.mutable_stored()->set_hash(hashes[i]);
    index_.applyEvent("d1", e);
  }
  const RouteDecision d = plan(20, workers);
  EXPECT_EQ(d.cached_blocks, 3);
  EXPECT_EQ(d.uncached_tokens, 8);
  EXPECT_EQ(d.prefill_address, "");
  EXPECT_EQ(plan(21, workers).prefill_address, "p1");  // 9 uncached
}

TEST_F(RoutePlannerTest, SkipsDecodeWorkersWhoseCacheIsTooSmall) {
  std::vector<WorkerState> workers = {plannerWorker("d1", "decode", 0, 0, 500),
                                      plannerWorker("d2", "decode", 3, 0, 500)};
  workers[0].info.set_num_blocks(2);  // 8 tokens
  EXPECT_EQ(plan(4, workers).decode_address, "d2");  // 4 + 16 tokens
}

TEST_F(RoutePlannerTest, ForgetsTheLoadOfWorkersThatLeftThePool) {
  const std::vector<WorkerState> both = {plannerWorker("d1", "decode", 0, 0, 500),
                                         plannerWorker("d2", "decode", 0, 0, 500)};
  RouteQuery query;
  const std::vector<int32_t> p = plannerPrompt(4);
  query.prompt = p;
  query.max_tokens = 16;
  query.key = 7;
  ASSERT_TRUE(planner_.plan(query, both, {}, {}).ok());
  EXPECT_EQ(planner_.loadModel().numWorkers(), 2u);
  // d1 leaves the pool; its request still ends later.
  query.key = 8;
  ASSERT_TRUE(planner_.plan(query, {both[1]}, {}, {}).ok());
  EXPECT_EQ(planner_.loadModel().numWorkers(), 1u);
  planner_.finished(7, 1, 1.0);
  planner_.finished(8, 1, 1.0);
  EXPECT_EQ(planner_.loadModel().numWorkers(), 1u);
}

}  // namespace
}  // namespace tandem::router::cluster
