// The scheduler's disaggregation states without a model: held prefills
// reserve their prompt and are never preempted; awaiting-KV requests are not
// scheduled until their remote prefill completes or fails.
#include <numeric>
#include <vector>

#include "gtest/gtest.h"
#include "kvcache/kv_cache_manager.h"
#include "server/engine/scheduler.h"

namespace tandem::engine {
namespace {

constexpr int kDisaggBlockSize = 4;

std::vector<int32_t> tokenRange(int n, int32_t first = 1) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

SamplingParams disaggMaxTokens(int n) {
  SamplingParams p;
  p.temperature = 0.0f;
  p.max_tokens = n;
  return p;
}

class SchedulerDisaggTest : public ::testing::Test {
 protected:
  void make(int num_blocks, int chunk_size) {
    kv_ = std::make_unique<kvcache::KvCacheManager>(num_blocks, kDisaggBlockSize);
    SchedulerConfig config;
    config.chunk_size = chunk_size;
    config.max_model_len = 256;
    scheduler_ = std::make_unique<Scheduler>(config, *kv_);
  }
  // one step with token 7 for every logit row; returns the batch.
  Batch step() {
    Batch batch = scheduler_->schedule();
    scheduler_->onStepResult(std::vector<int32_t>(batch.numLogitRows(), 7));
    return batch;
  }
  std::unique_ptr<kvcache::KvCacheManager> kv_;
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(SchedulerDisaggTest, AHeldPrefillIsNeverPreemptedAndKeepsItsBlocksUntilReleased) {
  make(12, 1);
  // admitted first, so it is the older running request.
  ASSERT_TRUE(scheduler_->addRequest(1, tokenRange(2), disaggMaxTokens(30)).ok());
  ASSERT_TRUE(scheduler_->addRequest(2, tokenRange(32, 100), disaggMaxTokens(1), true).ok());
  Batch first = step();
  ASSERT_EQ(first.seqs.size(), 2u);
  // the held prefill reserved its 8 blocks at once but the batch names only
  // the one its chunk needs.
  EXPECT_EQ(kv_->blockTable(2).size(), 8u);
  EXPECT_EQ(first.seqs[1].block_table.size(), 1u);
  int held_steps = 1;
  while (!scheduler_->isHeld(2) && held_steps < 100) {
    const Request* held = scheduler_->findRequest(2);
    ASSERT_NE(held, nullptr);
    EXPECT_EQ(held->num_preemptions, 0);
    EXPECT_EQ(held->state, RequestState::kRunning);
    step();
    ++held_steps;
  }
  EXPECT_EQ(held_steps, 32);  // one prompt token a step, never set back.
  // request 1 outgrew the 4 blocks left and had to preempt itself.
  EXPECT_GT(scheduler_->numPreemptions(), 0);
  EXPECT_EQ(scheduler_->numHeld(), 1);
  EXPECT_EQ(kv_->blockTable(2).size(), 8u);
  // it cannot finish while the held blocks stay.
  for (int i = 0; i < 50; ++i) step();
  ASSERT_NE(scheduler_->findRequest(1), nullptr);
  EXPECT_TRUE(scheduler_->releaseHeld(2));
  EXPECT_FALSE(scheduler_->releaseHeld(2));
  for (int i = 0; i < 200 && scheduler_->hasUnfinished(); ++i) step();
  EXPECT_FALSE(scheduler_->hasUnfinished());
  EXPECT_EQ(kv_->numFreeBlocks(), 12);
  // the id is free again once released.
  EXPECT_TRUE(scheduler_->addRequest(2, tokenRange(3), disaggMaxTokens(1)).ok());
}

TEST_F(SchedulerDisaggTest, AHeldIdCannotBeReused) {
  make(16, 512);
  ASSERT_TRUE(scheduler_->addRequest(5, tokenRange(6), disaggMaxTokens(1), true).ok());
  step();
  ASSERT_TRUE(scheduler_->isHeld(5));
  EXPECT_EQ(scheduler_->addRequest(5, tokenRange(3), disaggMaxTokens(1)).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(scheduler_->admitAwaitingKv(5, tokenRange(3), disaggMaxTokens(1)).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(scheduler_->abort(5).code(), absl::StatusCode::kNotFound);
}

TEST_F(SchedulerDisaggTest, AnAwaitingRequestIsScheduledOnlyAfterItsKvArrives) {
  make(16, 512);
  auto cached = scheduler_->admitAwaitingKv(1, tokenRange(10), disaggMaxTokens(3));
  ASSERT_TRUE(cached.ok());
  EXPECT_EQ(*cached, 0);
  EXPECT_EQ(kv_->blockTable(1).size(), 3u);
  EXPECT_EQ(scheduler_->numAwaitingKv(), 1);
  EXPECT_EQ(scheduler_->numPrefillTokensQueued(), 0);
  EXPECT_FALSE(scheduler_->hasSchedulable());
  EXPECT_TRUE(step().seqs.empty());

  auto out = scheduler_->completeRemotePrefill(1, 42);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->token, 42);
  EXPECT_EQ(out->num_output_tokens, 1);
  EXPECT_EQ(out->finish_reason, FinishReason::kNone);
  EXPECT_EQ(scheduler_->numAwaitingKv(), 0);
  EXPECT_EQ(scheduler_->numRunning(), 1);
  // the prompt's two full blocks are in the prefix cache now.
  EXPECT_TRUE(kv_->blockPool().blockHash(kv_->blockTable(1)[1]).has_value());
  EXPECT_FALSE(kv_->blockPool().blockHash(kv_->blockTable(1)[2]).has_value());
  // the next step decodes the first token at position 10.
  Batch batch = step();
  ASSERT_EQ(batch.seqs.size(), 1u);
  EXPECT_EQ(batch.seqs[0].start_pos, 10);
  EXPECT_EQ(batch.seqs[0].tokens, std::vector<int32_t>{42});
  EXPECT_EQ(scheduler_->completeRemotePrefill(1, 42).status().code(),
            absl::StatusCode::kNotFound);

  // a second request with the same prompt hits the two committed blocks.
  auto again = scheduler_->admitAwaitingKv(2, tokenRange(10), disaggMaxTokens(3));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 8);
}

TEST_F(SchedulerDisaggTest, AFailedRemotePrefillPrefillsLocallyFirst) {
  make(16, 512);
  ASSERT_TRUE(scheduler_->addRequest(1, tokenRange(5, 50), disaggMaxTokens(2)).ok());
  ASSERT_TRUE(scheduler_->admitAwaitingKv(2, tokenRange(9), disaggMaxTokens(2)).ok());
  EXPECT_EQ(kv_->numFreeBlocks(), 13);
  ASSERT_TRUE(scheduler_->failRemotePrefill(2).ok());
  EXPECT_EQ(kv_->numFreeBlocks(), 16);  // nothing cached from its blocks.
  EXPECT_EQ(scheduler_->numAwaitingKv(), 0);
  EXPECT_EQ(scheduler_->numWaiting(), 2);
  Batch batch = step();
  ASSERT_EQ(batch.seqs.size(), 2u);
  EXPECT_EQ(batch.seqs[0].seq_id, 2u);  // at the front of the queue.
  EXPECT_EQ(batch.seqs[0].start_pos, 0);
  EXPECT_EQ(batch.seqs[0].tokens, tokenRange(9));
  EXPECT_EQ(scheduler_->failRemotePrefill(2).code(), absl::StatusCode::kNotFound);
}

TEST_F(SchedulerDisaggTest, RefusesAnAwaitingRequestWhoseBlocksAreNotFree) {
  make(4, 512);
  ASSERT_TRUE(scheduler_->admitAwaitingKv(1, tokenRange(12), disaggMaxTokens(2)).ok());
  EXPECT_EQ(scheduler_->admitAwaitingKv(2, tokenRange(6, 30), disaggMaxTokens(2)).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(kv_->numFreeBlocks(), 1);
  EXPECT_EQ(scheduler_->findRequest(2), nullptr);
  ASSERT_TRUE(scheduler_->abort(1).ok());
  EXPECT_EQ(kv_->numFreeBlocks(), 4);
  EXPECT_EQ(scheduler_->numAwaitingKv(), 0);
  EXPECT_FALSE(scheduler_->hasUnfinished());
}

}  // namespace
}  // namespace tandem::engine
