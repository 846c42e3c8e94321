// EngineLoop: the engine on its own thread, fed from other threads — the
// oracle through concurrent submissions, cancellation freeing blocks, early
// refusals, and stop() ending everything.
#include "server/engine/engine_loop.h"

#include <condition_variable>
#include <future>
#include <map>
#include <mutex>

#include "generation/request_limits.h"
#include "gtest/gtest.h"
#include "tests/server/engine/engine_loop_test_support.h"
#include "tests/stories_oracle.h"
#include "tests/test_paths.h"

namespace tandem::engine {
namespace {

using testing_support::Collector;
using testing_support::greedy;

class EngineLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EngineAssemblyOptions options;
    options.num_threads = 1;
    auto local = EngineAssembly::create(testing::storiesGguf(), options);
    ASSERT_TRUE(local.ok()) << local.status();
    loop_ = std::make_unique<EngineLoop>(std::move(*local));
  }
  std::unique_ptr<EngineLoop> loop_;
};

TEST_F(EngineLoopTest, ConcurrentSubmissionsFromManyThreadsMatchTheOracle) {
  const auto& cases = testing::storiesOracle();
  std::vector<Collector> collectors(cases.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < cases.size(); ++i) {
    threads.emplace_back([&, i] {
      const int max_tokens = static_cast<int>(cases[i].completion_ids.size());
      EXPECT_TRUE(loop_->submit(i, cases[i].prompt_ids, greedy(max_tokens),
                                collectors[i].callback()).ok());
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < cases.size(); ++i) {
    ASSERT_TRUE(collectors[i].wait()) << i;
    EXPECT_EQ(collectors[i].tokens, cases[i].completion_ids) << cases[i].prompt;
    EXPECT_EQ(collectors[i].finish, generation::FinishReason::kLength);
    EXPECT_EQ(collectors[i].calls_after_finish, 0);
  }
}

TEST_F(EngineLoopTest, CancelEndsARequestWithAbortAndFreesItsBlocks) {
  const int total_blocks = loop_->stats().num_blocks;
  Collector c;
  generation::SamplingParams p = greedy(2000);
  p.ignore_eos = true;
  ASSERT_TRUE(loop_->submit(7, testing::storiesOracle()[0].prompt_ids, p, c.callback()).ok());
  while (c.numTokens() < 5) std::this_thread::yield();
  loop_->cancel(7);
  ASSERT_TRUE(c.wait());
  EXPECT_EQ(c.finish, generation::FinishReason::kAbort);
  EXPECT_LT(c.tokens.size(), 2000u);
  // the next step publishes the freed blocks: wait for the stats.
  for (int i = 0; i < 1000 && loop_->stats().num_running > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const EngineLoopStats s = loop_->stats();
  EXPECT_EQ(s.num_running, 0);
  EXPECT_EQ(s.num_free_blocks, total_blocks);
  // cancelling again, or an unknown id, does nothing.
  loop_->cancel(7);
  loop_->cancel(12345);
}

// what the loop's limits() report is what the rule refuses against; the
// loop itself asserts them (the front ends checked).
TEST_F(EngineLoopTest, ItsLimitsAreTheEnginesAndItAssertsThem) {
  const generation::RequestLimits limits = loop_->limits();
  EXPECT_EQ(limits.max_model_len, loop_->maxModelLen());
  EXPECT_EQ(limits.vocab_size, loop_->vocabSize());
  generation::SamplingParams biased = greedy(4);
  biased.logit_bias = {{loop_->vocabSize(), 1.0f}};
  EXPECT_EQ(generation::checkRequest(limits, std::vector<int32_t>{1, 2}, biased).message(),
            "logit_bias token id 512 is outside the vocabulary [0, 512)");
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      (void)loop_->submit(1, {1, loop_->vocabSize()}, greedy(4), [](const generation::TokenOutput&) {}),
      "TANDEM_CHECK failed");
}

TEST_F(EngineLoopTest, StopEndsUnfinishedRequestsAndRefusesNewOnes) {
  Collector c;
  generation::SamplingParams p = greedy(400);
  p.ignore_eos = true;
  ASSERT_TRUE(loop_->submit(1, {1, 2, 3}, p, c.callback()).ok());
  loop_->stop();
  ASSERT_TRUE(c.wait(std::chrono::seconds(1)));
  EXPECT_EQ(c.finish, generation::FinishReason::kAbort);
  Collector d;
  EXPECT_EQ(loop_->submit(2, {1, 2}, greedy(2), d.callback()).code(),
            absl::StatusCode::kFailedPrecondition);
  loop_->stop();  // idempotent
}

}  // namespace
}  // namespace tandem::engine
