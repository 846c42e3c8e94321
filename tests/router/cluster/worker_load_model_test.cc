// The load model's length-aware prefill rate: a worker's speed is learned as
// a factor against the expected throughput by prompt length. Through the
// real WorkerLoadModel and RoutePlanner.
#include "router/cluster/worker_load_model.h"

#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "proto/convert/worker_enum_names.h"
#include "router/cluster/route_planner.h"

namespace tandem::router::cluster {
namespace {

// a prefill throughput shaped like a GPU's: short prompts pay fixed costs,
// long ones attention's quadratic term (tokens/s by prompt length).
double shape(double prompt_tokens) {
  if (prompt_tokens <= 200) return 500;
  if (prompt_tokens <= 5000) return 2000;
  return 1000;
}

WorkerLoadModelOptions shaped() {
  return WorkerLoadModelOptions{.default_prefill_tokens_per_s = 2000,
                                .default_decode_s_per_step = 0.01,
                                .expected_prefill_tokens_per_s = shape};
}

// `n` requests of `tokens` tokens to `address`, one a second from `start`,
// each prefilled at `tokens_per_s` (the worker is idle when each comes).
void serve(WorkerLoadModel& model, const std::string& address, uint64_t first_key, int n, int64_t tokens,
           double tokens_per_s, double start) {
  for (int i = 0; i < n; ++i) {
    const uint64_t key = first_key + static_cast<uint64_t>(i);
    const double t = start + i;
    model.onRouted(key, address, tokens, 1, t);
    model.onFirstToken(key, t + static_cast<double>(tokens) / tokens_per_s);
    model.onFinished(key, 1, t + 0.5);
  }
}

TEST(WorkerLoadModelTest, AWorkerSeenOnShortPromptsIsPredictedAtTheShapeForLongOnes) {
  WorkerLoadModel model(shaped());
  // d1 runs exactly as the shape says; 100-token prompts at 500 tokens/s.
  serve(model, "d1", 1, 30, 100, 500, 0);
  EXPECT_NEAR(model.load("d1", 100, 100).prefill_tokens_per_s, 500, 10);
  // a 50k-token prompt runs at the shape's 1000 tokens/s, not at the 500
  // that the short ones taught.
  EXPECT_NEAR(model.load("d1", 100, 50000).prefill_tokens_per_s, 1000, 20);
  EXPECT_NEAR(model.load("d1", 100, 1000).prefill_tokens_per_s, 2000, 40);
}

TEST(WorkerLoadModelTest, ASlowWorkersFactorCarriesToEveryLength) {
  WorkerLoadModel model(shaped());
  // d1 is half as fast as the shape, seen on 100-token prompts only.
  serve(model, "d1", 1, 40, 100, 250, 0);
  EXPECT_NEAR(model.load("d1", 100, 50000).prefill_tokens_per_s, 500, 15);
  EXPECT_NEAR(model.load("d1", 100, 1000).prefill_tokens_per_s, 1000, 30);
  // a worker never seen runs at the shape.
  EXPECT_NEAR(model.load("d2", 100, 50000).prefill_tokens_per_s, 1000, 1);
}

TEST(WorkerLoadModelTest, QueuedPromptsAreTimedAtTheirOwnLengthsRates) {
  WorkerLoadModel model(shaped());
  // two 100-token prompts wait on d1 (0.2 s each at the shape): a 1000-token
  // prompt behind them takes 0.4 + 0.5 s.
  model.onRouted(1, "d1", 100, 1, 0);
  model.onRouted(2, "d1", 100, 1, 0);
  const WorkerLoad load = model.load("d1", 0, 1000);
  EXPECT_EQ(load.queued_prefill_tokens, 200);
  EXPECT_NEAR(load.prefill_queue_s, 0.4, 1e-9);
  EXPECT_NEAR(load.prefill_tokens_per_s, 2000, 1e-9);
}

TEST(WorkerLoadModelTest, BusyPeriodSamplesCountOnlyTheTimeSinceThePreviousFirstToken) {
  WorkerLoadModel model(shaped());
  // a 100-token prompt (0.2 s at the shape) and a 1000-token one (0.5 s)
  // come at once to a worker at the shape: the second's first token after
  // 0.7 s is a sample of 0.5 s for its own 1000 tokens, not of 1100 tokens
  // in 0.7 s.
  model.onRouted(1, "d1", 100, 1, 0);
  model.onRouted(2, "d1", 1000, 1, 0);
  model.onFirstToken(1, 0.2);
  model.onFirstToken(2, 0.7);
  EXPECT_NEAR(model.load("d1", 1, 1000).prefill_tokens_per_s, 2000, 1);
}

TEST(WorkerLoadModelTest, AStaleQueueReportDoesNotMakeTheWorkerLookFast) {
  WorkerLoadModel model(shaped());
  // the last Stats said 3000 tokens queued; the worker has prefilled them
  // since. A 1000-token prompt routed now answers in 0.5 s, as the shape
  // says: the worker is not 8000 tokens/s fast.
  model.observeStats("d1", 3000, 0, 0);
  model.onRouted(1, "d1", 1000, 1, 10);
  model.onFirstToken(1, 10.5);
  model.observeStats("d1", 0, 0, 0);
  EXPECT_NEAR(model.load("d1", 11, 1000).prefill_tokens_per_s, 2000, 1);
}

TEST(WorkerLoadModelTest, ADecodeWorkerWaitingForAPrefillWorkersKvIsNotStalled) {
  WorkerLoadModel model(shaped());
  // d1 decodes a request that p1 prefills (no prefill tokens on d1); its
  // first token is 10 s late. d1 prefills nothing, so it is no slower.
  model.onRouted(1, "d1", 0, 1, 0, 4000);
  model.onRouted(2, "p1", 4000, 0, 0, 4000);
  EXPECT_NEAR(model.load("d1", 10, 1000).prefill_tokens_per_s, 2000, 1e-9);
  // p1, with the prefill 10 s overdue (2 s expected), reads slower.
  EXPECT_LT(model.load("p1", 10, 1000).prefill_tokens_per_s, 1000);
}

WorkerState queuedWorker(const std::string& address, int64_t queued) {
  WorkerState w;
  w.address = address;
  w.has_info = true;
  w.healthy = true;
  w.has_stats = true;
  w.info.set_worker_id(address);
  w.info.set_address(address);
  w.info.set_role(*rpc::parseWorkerRole("decode"));
  w.info.set_block_size(16);
  w.info.set_num_blocks(100000);
  w.info.set_max_model_len(1 << 20);
  w.stats.set_num_free_blocks(100000);
  w.stats.set_num_prefill_tokens_queued(queued);
  return w;
}

TEST(WorkerLoadModelTest, ALongPromptGoesToTheIdleWorkerThatServedShortOnes) {
  RoutePlannerOptions o;
  o.policy = "kv";
  o.seed = 7;
  o.load = shaped();
  RoutePlanner planner(o, nullptr);
  // d1 served 100-token prompts (500 tokens/s), d2 1000-token ones (2000
  // tokens/s): both run at the shape. d2 has 5000 tokens queued; d1 is idle.
  serve(planner.loadModel(), "d1", 1, 20, 100, 500, 0);
  serve(planner.loadModel(), "d2", 101, 20, 1000, 2000, 0);
  const std::vector<WorkerState> workers = {queuedWorker("d1", 0), queuedWorker("d2", 5000)};
  // a 50k-token prompt: 50 s on either, plus d2's queue. One rate a worker
  // (500 against 2000 tokens/s) sent it behind d2's queue.
  RouteQuery q;
  q.prompt_tokens = 50000;
  q.max_tokens = 8;
  q.now_s = 100;
  absl::StatusOr<RouteDecision> d = planner.plan(q, workers, {}, {});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->decode_address, "d1");
}

}  // namespace
}  // namespace tandem::router::cluster
