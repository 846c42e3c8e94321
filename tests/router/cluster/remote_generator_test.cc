#include "router/cluster/remote_generator.h"

#include "gtest/gtest.h"
#include "tests/router/cluster/fake_worker.h"

namespace tandem::router::cluster {
namespace {

using namespace std::chrono_literals;
using testing::fakeToken;
using testing::FakeWorker;
using testing::FakeWorkerConfig;
using testing::waitFor;

// what one request's callback saw.
struct Collected {
  std::mutex mu;
  std::vector<generation::TokenOutput> outputs;
  int finals = 0;

  void add(const generation::TokenOutput& out) {
    std::lock_guard lock(mu);
    outputs.push_back(out);
    if (out.finished()) ++finals;
  }
  std::vector<int32_t> tokens() {
    std::lock_guard lock(mu);
    std::vector<int32_t> t;
    for (const auto& o : outputs) {
      if (o.token >= 0) t.push_back(o.token);
    }
    return t;
  }
  int numFinals() {
    std::lock_guard lock(mu);
    return finals;
  }
  generation::TokenOutput last() {
    std::lock_guard lock(mu);
    return outputs.back();
  }
};

std::vector<int32_t> prompt(int n) {
  std::vector<int32_t> p(n);
  for (int i = 0; i < n; ++i) p[i] = 100 + i;
  return p;
}

// the tokens an undisturbed fake run of `max_tokens` gives after `prompt_len`.
std::vector<int32_t> expectedTokens(int prompt_len, int max_tokens) {
  std::vector<int32_t> t;
  for (int i = 0; i < max_tokens; ++i) t.push_back(fakeToken(prompt_len + i));
  return t;
}

class RemoteGeneratorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    d1_.start();
    d2_.start();
    p1_.start();
    WorkerPoolOptions options;
    options.poll_interval = 30ms;
    options.rpc_deadline = 300ms;
    pool_ = std::make_unique<WorkerPool>(options, &metrics_);
    pool_->start();
  }
  void TearDown() override {
    if (generator_) generator_->stop();
    pool_->stop();
  }
  // registers the workers and waits until their stats are in.
  void addWorkers(std::vector<FakeWorker*> workers) {
    for (FakeWorker* w : workers) ASSERT_TRUE(pool_->registerWorker(w->info()).ok());
    pool_->pollOnce();
  }
  void makeBackend(int max_local_prefill_tokens = 8,
                   std::chrono::milliseconds no_worker_timeout = 2000ms) {
    RemoteGeneratorOptions options;
    options.planner.max_local_prefill_tokens = max_local_prefill_tokens;
    options.no_worker_timeout = no_worker_timeout;
    options.retry_delay = 20ms;
    options.watchdog_interval = 20ms;
    generator_ = std::make_unique<RemoteGenerator>(options, pool_.get(), &index_, &metrics_);
  }
  absl::StatusOr<generation::RequestId> submit(int prompt_len, int max_tokens, Collected* out) {
    generation::SamplingParams params;
    params.temperature = 0;
    params.max_tokens = max_tokens;
    return generator_->submit(prompt(prompt_len), params,
                            [out](const generation::TokenOutput& o) { out->add(o); });
  }
  double counter(const std::string& name, const std::string& kind = "") {
    for (const auto& family : registry_.Collect()) {
      if (family.name != name) continue;
      for (const auto& m : family.metric) {
        if (kind.empty() || (!m.label.empty() && m.label[0].value == kind)) {
          return m.counter.value;
        }
      }
    }
    return -1;
  }

  FakeWorker d1_{FakeWorkerConfig{.worker_id = "d1"}};
  FakeWorker d2_{FakeWorkerConfig{.worker_id = "d2"}};
  FakeWorker p1_{FakeWorkerConfig{.worker_id = "p1", .role = "prefill"}};
  prometheus::Registry registry_;
  ClusterMetrics metrics_{registry_};
  std::unique_ptr<WorkerPool> pool_;
  KvIndex index_;
  std::unique_ptr<RemoteGenerator> generator_;
};

TEST_F(RemoteGeneratorTest, StreamsTokensFromTheLeastLoadedDecodeWorker) {
  d1_.setStats(4, 0, 1000);
  addWorkers({&d1_, &d2_});
  makeBackend();
  EXPECT_TRUE(generator_->ready());
  EXPECT_EQ(generator_->limits().max_model_len, 512);
  Collected out;
  ASSERT_TRUE(submit(5, 6, &out).ok());
  ASSERT_TRUE(waitFor([&] { return out.numFinals() == 1; }));
  EXPECT_EQ(out.tokens(), expectedTokens(5, 6));
  EXPECT_EQ(out.last().finish_reason, generation::FinishReason::kLength);
  EXPECT_EQ(out.last().num_prompt_tokens, 5);
  EXPECT_EQ(out.last().num_output_tokens, 6);
  EXPECT_TRUE(d1_.generateRequests().empty());
  ASSERT_EQ(d2_.generateRequests().size(), 1u);
  EXPECT_EQ(d2_.generateRequests()[0].params().max_tokens(), 6);
  EXPECT_EQ(counter("tandem:router_prefills_total", "local"), 1);
  EXPECT_TRUE(waitFor([&] { return generator_->numInFlight() == 0; }));
  const generation::GeneratorLoad load = generator_->load();
  EXPECT_EQ(load.num_running, 4);
  EXPECT_EQ(load.num_blocks, 2000);
}

TEST_F(RemoteGeneratorTest, AsksThePrefillWorkerOnlyForLongUncachedPrompts) {
  addWorkers({&d1_, &p1_});
  makeBackend(/*max_local_prefill_tokens=*/8);
  Collected short_out, long_out;
  ASSERT_TRUE(submit(8, 2, &short_out).ok());
  ASSERT_TRUE(waitFor([&] { return short_out.numFinals() == 1; }));
  ASSERT_TRUE(submit(9, 2, &long_out).ok());
  ASSERT_TRUE(waitFor([&] { return long_out.numFinals() == 1; }));
  const auto requests = d1_.generateRequests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].prefill_address(), "");
  EXPECT_EQ(requests[1].prefill_address(), p1_.address());
  EXPECT_TRUE(p1_.generateRequests().empty());
  EXPECT_EQ(counter("tandem:router_prefills_total", "remote"), 1);
}

TEST_F(RemoteGeneratorTest, BlocksCachedOnTheDecodeWorkerKeepThePrefillLocal) {
  addWorkers({&d1_, &p1_});
  makeBackend(/*max_local_prefill_tokens=*/8);
  // d1 holds the first 2 blocks (8 tokens) of the 12-token prompt: 4 uncached.
  const std::vector<int32_t> p = prompt(12);
  const std::vector<kvcache::BlockHash> hashes = kvcache::blockHashes(p, 4);
  tandem::v1::KvSnapshotResponse snapshot;
  snapshot.add_blocks()->set_hash(hashes[0]);
  snapshot.add_blocks()->set_hash(hashes[1]);
  index_.applySnapshot(d1_.address(), snapshot);
  Collected out;
  ASSERT_TRUE(submit(12, 2, &out).ok());
  ASSERT_TRUE(waitFor([&] { return out.numFinals() == 1; }));
  EXPECT_EQ(d1_.generateRequests()[0].prefill_address(), "");
}

TEST_F(RemoteGeneratorTest, MigratesWhenTheDecodeStreamFailsMidway) {
  d1_.die_after = 3;
  d2_.setStats(5, 0, 1000);  // d1 is chosen first
  addWorkers({&d1_, &d2_});
  makeBackend();
  Collected out;
  ASSERT_TRUE(submit(5, 10, &out).ok());
  ASSERT_TRUE(waitFor([&] { return out.numFinals() == 1; }));
  EXPECT_EQ(out.tokens(), expectedTokens(5, 10));  // each token once, in order
  EXPECT_EQ(out.last().finish_reason, generation::FinishReason::kLength);
  EXPECT_EQ(out.last().num_prompt_tokens, 5);
  EXPECT_EQ(out.last().num_output_tokens, 10);
  ASSERT_EQ(d2_.generateRequests().size(), 1u);
  const tandem::v1::WorkerGenerateRequest moved = d2_.generateRequests()[0];
  std::vector<int32_t> moved_prompt(moved.token_ids().begin(), moved.token_ids().end());
  std::vector<int32_t> want = prompt(5);
  for (int i = 0; i < 3; ++i) want.push_back(fakeToken(5 + i));
  EXPECT_EQ(moved_prompt, want);
  EXPECT_EQ(moved.params().max_tokens(), 7);
  EXPECT_EQ(counter("tandem:router_migrations_total"), 1);
}

TEST_F(RemoteGeneratorTest, AScoringRequestIsPrefilledOnItsDecodeWorkerAndScoredOnce) {
  d1_.die_after = 2;
  d2_.setStats(5, 0, 1000);  // d1 is chosen first
  addWorkers({&d1_, &d2_, &p1_});
  makeBackend(/*max_local_prefill_tokens=*/8);
  Collected out;
  generation::SamplingParams params;
  params.temperature = 0;
  params.max_tokens = 5;
  params.prompt_logprobs = 1;
  ASSERT_TRUE(generator_->submit(prompt(20), params, [&out](const generation::TokenOutput& o) { out.add(o); }).ok());
  ASSERT_TRUE(waitFor([&] { return out.numFinals() == 1; }));
  EXPECT_EQ(out.tokens(), expectedTokens(20, 5));
  // a 20-token prompt would go to p1; one that scores its prompt never does.
  ASSERT_EQ(d1_.generateRequests().size(), 1u);
  EXPECT_EQ(d1_.generateRequests()[0].prefill_address(), "");
  EXPECT_TRUE(d1_.generateRequests()[0].params().has_prompt_logprobs());
  // the migration after two tokens does not ask for the scores again.
  ASSERT_EQ(d2_.generateRequests().size(), 1u);
  EXPECT_FALSE(d2_.generateRequests()[0].params().has_prompt_logprobs());
  std::lock_guard lock(out.mu);
  ASSERT_EQ(out.outputs.front().prompt_logprobs.size(), 19u);  // 10 parts of 2, assembled
  for (int i = 1; i < 20; ++i) {
    EXPECT_EQ(out.outputs.front().prompt_logprobs[i - 1].token, 100 + i);
    EXPECT_FLOAT_EQ(out.outputs.front().prompt_logprobs[i - 1].logprob, -0.5f * i);
  }
  for (size_t k = 1; k < out.outputs.size(); ++k) EXPECT_TRUE(out.outputs[k].prompt_logprobs.empty());
}

TEST_F(RemoteGeneratorTest, MigratesWhenTheDecodeWorkerShutsDown) {
  d1_.token_delay_ms = 40;
  d2_.setStats(5, 0, 1000);
  addWorkers({&d1_, &d2_});
  makeBackend();
  Collected out;
  ASSERT_TRUE(submit(5, 20, &out).ok());
  ASSERT_TRUE(waitFor([&] { return out.tokens().size() >= 3; }));
  d1_.shutdown();
  ASSERT_TRUE(waitFor([&] { return out.numFinals() == 1; }));
  EXPECT_EQ(out.tokens(), expectedTokens(5, 20));
  EXPECT_EQ(out.last().finish_reason, generation::FinishReason::kLength);
  ASSERT_EQ(d2_.generateRequests().size(), 1u);
  const int delivered = d2_.generateRequests()[0].token_ids_size() - 5;
  EXPECT_GE(delivered, 3);
  EXPECT_EQ(d2_.generateRequests()[0].params().max_tokens(), 20 - delivered);
}

TEST_F(RemoteGeneratorTest, MigratesOffAWorkerThePoolFindsUnhealthy) {
  d1_.token_delay_ms = 40;
  d2_.setStats(5, 0, 1000);
  addWorkers({&d1_, &d2_});
  makeBackend();
  Collected out;
  ASSERT_TRUE(submit(5, 30, &out).ok());
  ASSERT_TRUE(waitFor([&] { return out.tokens().size() >= 2; }));
  d1_.fail_stats = true;  // the stream still flows, but d1 counts as gone
  ASSERT_TRUE(waitFor([&] { return out.numFinals() == 1; }));
  EXPECT_EQ(out.tokens(), expectedTokens(5, 30));
  EXPECT_EQ(d2_.generateRequests().size(), 1u);
  EXPECT_TRUE(waitFor([&] { return d1_.cancelledGenerates() == 1; }));
}

// scale-down: the stream on a draining worker finishes there (no
// migration) and new requests go to the other one.
TEST_F(RemoteGeneratorTest, AStreamOnADrainingWorkerFinishesThereAndNewRequestsGoElsewhere) {
  d1_.token_delay_ms = 20;
  d2_.setStats(5, 0, 1000);  // d1 is chosen first
  addWorkers({&d1_, &d2_});
  makeBackend();
  Collected out;
  ASSERT_TRUE(submit(5, 30, &out).ok());
  ASSERT_TRUE(waitFor([&] { return out.tokens().size() >= 2; }));
  pool_->deregisterWorker("d1", /*draining=*/true);
  Collected next;
  ASSERT_TRUE(submit(5, 4, &next).ok());
  ASSERT_TRUE(waitFor([&] { return out.numFinals() == 1 && next.numFinals() == 1; }));
  EXPECT_EQ(out.tokens(), expectedTokens(5, 30));
  EXPECT_EQ(next.tokens(), expectedTokens(5, 4));
  EXPECT_EQ(d1_.generateRequests().size(), 1u);
  EXPECT_EQ(d2_.generateRequests().size(), 1u);
  EXPECT_EQ(d1_.cancelledGenerates(), 0);
  EXPECT_EQ(counter("tandem:router_migrations_total"), 0);
}

// the drain's deadline (or the worker's death): a draining worker that
// stops answering has its stream migrated, as any lost worker.
TEST_F(RemoteGeneratorTest, AStreamOnADrainingWorkerThatLeavesMigrates) {
  d1_.token_delay_ms = 40;
  d2_.setStats(5, 0, 1000);
  addWorkers({&d1_, &d2_});
  makeBackend();
  Collected out;
  ASSERT_TRUE(submit(5, 30, &out).ok());
  ASSERT_TRUE(waitFor([&] { return out.tokens().size() >= 2; }));
  d1_.draining = true;
  ASSERT_TRUE(waitFor([&] {
    for (const WorkerState& w : pool_->snapshot()) {
      if (w.address == d1_.address()) return w.draining;
    }
    return false;
  }));
  d1_.fail_stats = true;  // past its drain deadline: Stats UNAVAILABLE
  ASSERT_TRUE(waitFor([&] { return out.numFinals() == 1; }));
  EXPECT_EQ(out.tokens(), expectedTokens(5, 30));
  EXPECT_EQ(d2_.generateRequests().size(), 1u);
  EXPECT_EQ(counter("tandem:router_migrations_total"), 1);
}

TEST_F(RemoteGeneratorTest, FailsWithErrorWhenNoDecodeWorkerComesBack) {
  d1_.die_after = 2;
  addWorkers({&d1_});
  makeBackend(8, /*no_worker_timeout=*/300ms);
  // the request must be accepted while d1 still looks healthy: on a slow machine
  // the pool's own polls (every 30 ms) could mark d1 down before submit, and the
  // router would then refuse the request up front (another test's case).
  pool_->stop();
  d1_.shutdown();
  Collected out;
  ASSERT_TRUE(submit(5, 10, &out).ok());
  ASSERT_TRUE(waitFor([&] { return out.numFinals() == 1; }));
  EXPECT_EQ(out.last().finish_reason, generation::FinishReason::kError);
  EXPECT_TRUE(out.tokens().empty());
}

TEST_F(RemoteGeneratorTest, CancelReachesTheDecodeWorker) {
  d1_.token_delay_ms = 30;
  addWorkers({&d1_});
  makeBackend();
  Collected out;
  absl::StatusOr<generation::RequestId> id = submit(5, 100, &out);
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE(waitFor([&] { return out.tokens().size() >= 2; }));
  generator_->cancel(*id);
  ASSERT_TRUE(waitFor([&] { return out.numFinals() == 1; }));
  EXPECT_EQ(out.last().finish_reason, generation::FinishReason::kAbort);
  EXPECT_TRUE(waitFor([&] { return d1_.cancelledGenerates() == 1; }));
  EXPECT_EQ(d1_.generateRequests().size(), 1u);  // no migration
}

TEST_F(RemoteGeneratorTest, CancelFromInsideTheCallbackIsSafe) {
  d1_.token_delay_ms = 10;
  addWorkers({&d1_});
  makeBackend();
  Collected out;
  std::atomic<generation::RequestId> id{0};
  generation::SamplingParams params;
  params.max_tokens = 100;
  absl::StatusOr<generation::RequestId> submitted =
      generator_->submit(prompt(5), params, [&](const generation::TokenOutput& o) {
        out.add(o);
        // a stop string matched: the front end cancels from its callback.
        if (o.token == fakeToken(7)) generator_->cancel(id.load());
      });
  ASSERT_TRUE(submitted.ok());
  id = *submitted;
  ASSERT_TRUE(waitFor([&] { return out.numFinals() == 1; }));
  EXPECT_EQ(out.last().finish_reason, generation::FinishReason::kAbort);
}

TEST_F(RemoteGeneratorTest, RejectsRequestsTheModelCannotTake) {
  makeBackend();
  Collected out;
  EXPECT_TRUE(absl::IsUnavailable(submit(5, 4, &out).status()));  // no workers yet
  EXPECT_FALSE(generator_->ready());
  addWorkers({&p1_});
  EXPECT_TRUE(absl::IsUnavailable(submit(5, 4, &out).status()));  // no decode worker
  addWorkers({&d1_});
  EXPECT_TRUE(absl::IsInvalidArgument(submit(512, 4, &out).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(submit(5, 0, &out).status()));
  generation::SamplingParams params;
  EXPECT_TRUE(absl::IsInvalidArgument(
      generator_->submit({1, 32000}, params, [](const generation::TokenOutput&) {}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      generator_->submit({}, params, [](const generation::TokenOutput&) {}).status()));
  generation::SamplingParams biased;
  biased.logit_bias = {{3, 1.0f}, {32000, 5.0f}};
  absl::StatusOr<generation::RequestId> refused =
      generator_->submit({1, 2}, biased, [](const generation::TokenOutput&) {});
  EXPECT_TRUE(absl::IsInvalidArgument(refused.status()));
  EXPECT_NE(refused.status().message().find("logit_bias token id 32000 is outside the vocabulary"),
            std::string::npos)
      << refused.status();
  EXPECT_TRUE(d1_.generateRequests().empty());
  EXPECT_EQ(out.numFinals(), 0);
}

TEST_F(RemoteGeneratorTest, StopEndsRequestsInProgress) {
  d1_.token_delay_ms = 30;
  addWorkers({&d1_});
  makeBackend();
  Collected out;
  ASSERT_TRUE(submit(5, 100, &out).ok());
  ASSERT_TRUE(waitFor([&] { return out.tokens().size() >= 1; }));
  generator_->stop();
  EXPECT_EQ(out.numFinals(), 1);
  EXPECT_EQ(out.last().finish_reason, generation::FinishReason::kAbort);
  EXPECT_TRUE(absl::IsUnavailable(submit(5, 4, &out).status()));
}

TEST_F(RemoteGeneratorTest, ShedsWhatNoWorkerCanStartWithinTheTtftSloAndCountsDecisions) {
  // d1 and d2 report 10000 prompt tokens queued: 1.25 s at the default rate.
  d1_.setStats(0, 0, 1000, 10000);
  d2_.setStats(0, 0, 1000, 10000);
  addWorkers({&d1_, &d2_});
  RemoteGeneratorOptions options;
  options.planner.ttft_slo_s = 0.5;
  options.retry_delay = 20ms;
  generator_ = std::make_unique<RemoteGenerator>(options, pool_.get(), &index_, &metrics_);
  Collected out;
  absl::StatusOr<generation::RequestId> id = submit(5, 6, &out);
  EXPECT_TRUE(absl::IsResourceExhausted(id.status())) << id.status();
  EXPECT_EQ(counter("tandem:router_shed_requests_total"), 1);
  EXPECT_EQ(generator_->numInFlight(), 0);
  EXPECT_TRUE(d1_.generateRequests().empty() && d2_.generateRequests().empty());
  // once a worker drains, requests go through and count as decisions.
  d2_.setStats(0, 0, 1000, 0);
  pool_->pollOnce();
  id = submit(5, 6, &out);
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(waitFor([&] { return out.numFinals() == 1; }));
  // labels outcome, policy: the first is the outcome (no worker held the prompt).
  EXPECT_EQ(counter("tandem:router_route_decisions_total", "cold"), 1);
  EXPECT_EQ(counter("tandem:router_route_prompt_tokens_total"), 5);
}

TEST_F(RemoteGeneratorTest, MigrationsAreNeverShedByTheTtftSlo) {
  // d1 breaks after 3 tokens; d2, the only other, is far past the SLO.
  d1_.die_after = 3;
  d2_.setStats(0, 0, 1000, 10000);
  addWorkers({&d1_, &d2_});
  RemoteGeneratorOptions options;
  options.planner.ttft_slo_s = 0.5;
  options.retry_delay = 20ms;
  options.no_worker_timeout = 2000ms;
  generator_ = std::make_unique<RemoteGenerator>(options, pool_.get(), &index_, &metrics_);
  Collected out;
  ASSERT_TRUE(submit(5, 10, &out).ok());
  ASSERT_TRUE(waitFor([&] { return out.numFinals() == 1; }));
  EXPECT_EQ(out.tokens(), expectedTokens(5, 10));
  EXPECT_EQ(out.last().finish_reason, generation::FinishReason::kLength);
  EXPECT_EQ(d2_.generateRequests().size(), 1u);
  EXPECT_EQ(counter("tandem:router_shed_requests_total"), 0);
  EXPECT_EQ(counter("tandem:router_migrations_total"), 1);
}

}  // namespace
}  // namespace tandem::router::cluster
