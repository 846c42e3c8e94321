// EngineLoop's prefill-worker side: a request submitted with the loop's
// HeldPrefillConnector computes the prompt's KV and its first token, reports
// progress chunk by chunk, and holds the blocks unchanged until the
// connector releases them or the request is cancelled.
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "gtest/gtest.h"
#include "server/engine/engine_loop.h"
#include "tests/server/engine/engine_loop_test_support.h"

namespace tandem::engine {
namespace {

using testing_support::Case;
using testing_support::eventually;
using testing_support::greedy;

constexpr int kBlockSize = 4;

// records one prefill's progress reports and final output, in order.
struct PrefillRecorder {
  std::mutex mu;
  std::condition_variable done_cv;
  std::vector<int> progress;
  std::vector<std::vector<int32_t>> tables;
  std::vector<generation::TokenOutput> done;
  int progress_after_done = 0;

  // submits a prefill of `prompt` under `id` with the held-prefill connector.
  absl::Status submit(EngineLoop& loop, generation::SeqId id, std::vector<int32_t> prompt,
                      const generation::SamplingParams& params,
                      HeldPrefillConnector::ProgressFn also = nullptr) {
    loop.heldPrefills().watch(id, [this, also](int computed, std::span<const int32_t> table) {
      {
        std::lock_guard lock(mu);
        if (!done.empty()) ++progress_after_done;
        progress.push_back(computed);
        tables.emplace_back(table.begin(), table.end());
      }
      if (also) also(computed, table);
    });
    // max_tokens 1, as the worker's prefill call asks.
    generation::SamplingParams one = params;
    one.max_tokens = 1;
    return loop.submit(id, std::move(prompt), one,
                       [this](const generation::TokenOutput& out) {
                         std::lock_guard lock(mu);
                         done.push_back(out);
                         done_cv.notify_all();
                       },
                       &loop.heldPrefills());
  }
  bool wait() {
    std::unique_lock lock(mu);
    return done_cv.wait_for(lock, std::chrono::seconds(30), [&] { return !done.empty(); });
  }
};

class EngineLoopPrefillTest : public ::testing::Test {
 protected:
  void start(int chunk_size, uint64_t kv_budget_bytes = 0) {
    EngineAssemblyOptions options = testing_support::smallOptions(kBlockSize, chunk_size);
    options.kv_budget_bytes = kv_budget_bytes;
    loop_ = testing_support::makeLoop(options);
    ASSERT_NE(loop_, nullptr);
  }
  size_t blockBytes() const { return loop_->localEngine().runner().kvLayout().blockBytes(); }
  std::vector<uint8_t> blockBytesOf(const std::vector<int32_t>& table) const {
    std::vector<uint8_t> out;
    for (int32_t id : table) {
      const auto* p = static_cast<const uint8_t*>(loop_->localEngine().runner().blockData(id));
      out.insert(out.end(), p, p + blockBytes());
    }
    return out;
  }
  std::unique_ptr<EngineLoop> loop_;
};

TEST_F(EngineLoopPrefillTest, FirstTokenEqualsTheOraclesAndBlocksAreHeldUntilRelease) {
  start(512);
  const int total = loop_->stats().num_blocks;
  std::vector<Case> cases = testing_support::oracleCases(0);
  for (const Case& c : testing_support::oracleCases(20)) cases.push_back(c);
  std::vector<PrefillRecorder> recorders(cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    // max_tokens is ignored: a prefill samples one token.
    ASSERT_TRUE(recorders[i].submit(*loop_, i, cases[i].prompt, greedy(40)).ok());
  }
  int held_blocks = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    ASSERT_TRUE(recorders[i].wait());
    ASSERT_EQ(recorders[i].done.size(), 1u);
    const generation::TokenOutput& out = recorders[i].done[0];
    EXPECT_EQ(out.token, cases[i].expected[0]) << i;
    EXPECT_EQ(out.finish_reason, generation::FinishReason::kLength);
    EXPECT_EQ(out.num_prompt_tokens, static_cast<int>(cases[i].prompt.size()));
    EXPECT_EQ(out.num_output_tokens, 1);
    ASSERT_FALSE(recorders[i].progress.empty());
    EXPECT_EQ(recorders[i].progress.back(), static_cast<int>(cases[i].prompt.size()));
    EXPECT_EQ(recorders[i].tables.back().size(),
              (cases[i].prompt.size() + kBlockSize - 1) / kBlockSize);
    held_blocks += static_cast<int>(recorders[i].tables.back().size());
  }
  ASSERT_TRUE(eventually([&] { return loop_->stats().num_held_prefills == 16; }));
  // prefix hits (the long prompts extend the short ones) share blocks, so
  // at most held_blocks blocks are held.
  EXPECT_LT(loop_->stats().num_free_blocks, total);
  EXPECT_GE(loop_->stats().num_free_blocks, total - held_blocks);
  for (size_t i = 0; i < cases.size(); ++i) loop_->heldPrefills().release(i);
  ASSERT_TRUE(eventually([&] { return loop_->stats().num_held_prefills == 0; }));
  EXPECT_EQ(loop_->stats().num_free_blocks, total);
  for (auto& r : recorders) EXPECT_EQ(r.done.size(), 1u);
}

TEST_F(EngineLoopPrefillTest, ProgressGrowsChunkByChunkUpToThePromptLength) {
  start(7);
  const Case c = testing_support::oracleCases(20)[1];  // 32 tokens
  const int len = static_cast<int>(c.prompt.size());
  PrefillRecorder r;
  ASSERT_TRUE(r.submit(*loop_, 1, c.prompt, greedy(1)).ok());
  ASSERT_TRUE(r.wait());
  std::vector<int> expected;
  for (int n = 7; n < len; n += 7) expected.push_back(n);
  expected.push_back(len);
  EXPECT_EQ(r.progress, expected);
  EXPECT_EQ(r.progress_after_done, 0);
  // the whole prompt's blocks are reserved from the start: the table never changes.
  for (const auto& table : r.tables) EXPECT_EQ(table, r.tables.front());
  EXPECT_EQ(r.tables.front().size(), static_cast<size_t>((len + kBlockSize - 1) / kBlockSize));
  EXPECT_EQ(r.done[0].token, c.expected[0]);
  loop_->heldPrefills().release(1);
}

TEST_F(EngineLoopPrefillTest, HeldBlocksStayUnchangedWhileOtherRequestsRun) {
  // a small cache, so the other requests evict and reuse every block they can.
  start(7);
  const size_t bytes = blockBytes();
  loop_.reset();
  start(7, bytes * 24);
  const int total = loop_->stats().num_blocks;
  ASSERT_EQ(total, 24);
  const Case held = testing_support::oracleCases(20)[3];  // 31 tokens: 8 blocks
  PrefillRecorder r;
  ASSERT_TRUE(r.submit(*loop_, 9, held.prompt, greedy(1)).ok());
  ASSERT_TRUE(r.wait());
  const std::vector<int32_t> table = r.tables.back();
  const std::vector<uint8_t> before = blockBytesOf(table);

  // the others need 16 blocks together at most; they must run beside the
  // held 8 without touching them.
  const auto short_cases = testing_support::oracleCases(0);
  std::vector<testing_support::Collector> others(short_cases.size());
  for (size_t i = 0; i < short_cases.size(); ++i) {
    ASSERT_TRUE(loop_->submit(100 + i, short_cases[i].prompt, greedy(48), others[i].callback()).ok());
  }
  for (size_t i = 0; i < short_cases.size(); ++i) {
    ASSERT_TRUE(others[i].wait());
    EXPECT_EQ(others[i].tokens, short_cases[i].expected) << i;
  }
  EXPECT_EQ(blockBytesOf(table), before);
  EXPECT_EQ(loop_->stats().num_held_prefills, 1);
  loop_->heldPrefills().release(9);
  ASSERT_TRUE(eventually([&] { return loop_->stats().num_held_prefills == 0; }));
  EXPECT_EQ(loop_->stats().num_free_blocks, total);
}

TEST_F(EngineLoopPrefillTest, CancelOfAHeldPrefillFreesItsBlocksWithoutASecondOutput) {
  start(512);
  const int total = loop_->stats().num_blocks;
  PrefillRecorder r;
  ASSERT_TRUE(r.submit(*loop_, 3, testing_support::oracleCases(20)[0].prompt, greedy(1)).ok());
  ASSERT_TRUE(r.wait());
  ASSERT_TRUE(eventually([&] { return loop_->stats().num_held_prefills == 1; }));
  EXPECT_LT(loop_->stats().num_free_blocks, total);
  loop_->cancel(3);
  ASSERT_TRUE(eventually([&] { return loop_->stats().num_held_prefills == 0; }));
  EXPECT_EQ(loop_->stats().num_free_blocks, total);
  loop_->heldPrefills().release(3);  // already gone: ignored.
  loop_->cancel(3);
  // a later request with the same id is a new request.
  PrefillRecorder again;
  ASSERT_TRUE(again.submit(*loop_, 3, {1, 2, 3}, greedy(1)).ok());
  ASSERT_TRUE(again.wait());
  EXPECT_EQ(again.done[0].finish_reason, generation::FinishReason::kLength);
  loop_->stop();
  EXPECT_EQ(r.done.size(), 1u);
  EXPECT_EQ(again.done.size(), 1u);
  EXPECT_EQ(loop_->stats().num_free_blocks, total);  // stop() freed the held blocks.
}

TEST_F(EngineLoopPrefillTest, CancelBeforeDoneAbortsThePrefill) {
  start(1);  // one token a step: the prefill is still under way at its first report.
  const int total = loop_->stats().num_blocks;
  PrefillRecorder r;
  ASSERT_TRUE(r.submit(*loop_, 5, testing_support::oracleCases(20)[2].prompt, greedy(1),
                       [&](int computed, std::span<const int32_t>) {
                         if (computed == 1) loop_->cancel(5);  // runs before the next step.
                       }).ok());
  ASSERT_TRUE(r.wait());
  EXPECT_EQ(r.done[0].finish_reason, generation::FinishReason::kAbort);
  EXPECT_EQ(r.done[0].token, -1);
  EXPECT_EQ(r.progress, std::vector<int>{1});
  ASSERT_TRUE(eventually([&] { return loop_->stats().num_free_blocks == total; }));
  EXPECT_EQ(loop_->stats().num_held_prefills, 0);
}

TEST_F(EngineLoopPrefillTest, RefusesPrefillsOnceStopped) {
  start(512);
  PrefillRecorder r;
  loop_->stop();
  EXPECT_EQ(r.submit(*loop_, 3, {1, 2}, greedy(1)).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(r.done.empty());
}

}  // namespace
}  // namespace tandem::engine
