// The scheduler with the disaggregation connectors, without a model: held
// prefills reserve their prompt, are never preempted and report their
// progress; remote-prefill requests wait (kWaitingForKv) and are not
// scheduled until their KV lands, or prefill locally when it fails or when
// their blocks are not free.
#include <map>
#include <numeric>
#include <optional>
#include <vector>

#include "gtest/gtest.h"
#include "kvcache/kv_cache_manager.h"
#include "server/engine/held_prefill_connector.h"
#include "server/engine/remote_prefill_connector.h"
#include "server/engine/scheduler.h"

namespace tandem::engine {
namespace {

constexpr int kDisaggBlockSize = 4;

std::vector<int32_t> tokenRange(int n, int32_t first = 1) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

generation::SamplingParams disaggMaxTokens(int n) {
  generation::SamplingParams p;
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
    scheduler_->addConnector(&remote_);
    scheduler_->addConnector(&held_);
  }
  // what the engine does between steps: lands what the connectors report
  // (no grammar here) and frees what they release; the landed outputs.
  std::vector<RequestOutput> collect() {
    std::vector<RequestOutput> out;
    for (KvConnector* c : scheduler_->connectors()) {
      for (const KvConnector::Landed& landed : c->takeLanded()) {
        const Request* req = scheduler_->findRequest(landed.id);
        if (req == nullptr || req->waiting_on != c) continue;
        if (auto r = scheduler_->land(c, landed)) out.push_back(*r);
      }
      for (const KvConnector::Landed& r : c->takeReleased()) scheduler_->releaseHeld(r);
    }
    return out;
  }
  // one step with token 7 for every logit row; returns the batch.
  Batch step() {
    collect();
    Batch batch = scheduler_->schedule();
    scheduler_->onStepResult(std::vector<int32_t>(batch.numLogitRows(), 7));
    return batch;
  }
  // submits `id` for a remote prefill; its allocation once admitted (step()).
  std::optional<RemotePrefillConnector::Allocation>* awaitRemote(generation::SeqId id,
                                                                 std::vector<int32_t> prompt, int max_tokens) {
    auto& slot = allocations_[id];
    remote_.expect(id, [&slot](std::optional<RemotePrefillConnector::Allocation> a) {
      slot = std::move(a);
    });
    EXPECT_TRUE(scheduler_->addRequest(id, std::move(prompt), disaggMaxTokens(max_tokens), &remote_).ok());
    return &slot;
  }
  generation::TokenOutput token(int32_t t) {
    generation::TokenOutput out;
    out.token = t;
    return out;
  }

  RemotePrefillConnector remote_{512};
  HeldPrefillConnector held_;
  std::map<generation::SeqId, std::optional<RemotePrefillConnector::Allocation>> allocations_;
  std::unique_ptr<kvcache::KvCacheManager> kv_;
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(SchedulerDisaggTest, AHeldPrefillIsNeverPreemptedAndKeepsItsBlocksUntilReleased) {
  make(12, 1);
  // admitted first, so it is the older running request.
  ASSERT_TRUE(scheduler_->addRequest(1, tokenRange(2), disaggMaxTokens(30)).ok());
  std::vector<int> progress;
  held_.watch(2, [&](int computed, std::span<const int32_t>) { progress.push_back(computed); });
  ASSERT_TRUE(scheduler_->addRequest(2, tokenRange(32, 100), disaggMaxTokens(1), &held_).ok());
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
  // each step reported one more token computed, up to the whole prompt.
  ASSERT_EQ(progress.size(), 32u);
  EXPECT_EQ(progress.front(), 1);
  EXPECT_EQ(progress.back(), 32);
  // request 1 outgrew the 4 blocks left and had to preempt itself.
  EXPECT_GT(scheduler_->numPreemptions(), 0);
  EXPECT_EQ(scheduler_->numHeld(), 1);
  EXPECT_EQ(kv_->blockTable(2).size(), 8u);
  // it cannot finish while the held blocks stay.
  for (int i = 0; i < 50; ++i) step();
  ASSERT_NE(scheduler_->findRequest(1), nullptr);
  held_.release(2);
  collect();
  EXPECT_FALSE(scheduler_->isHeld(2));
  EXPECT_FALSE(scheduler_->releaseHeld({.id = 2}));
  for (int i = 0; i < 200 && scheduler_->hasUnfinished(); ++i) step();
  EXPECT_FALSE(scheduler_->hasUnfinished());
  EXPECT_EQ(kv_->numFreeBlocks(), 12);
  // the id is free again once released.
  EXPECT_TRUE(scheduler_->addRequest(2, tokenRange(3), disaggMaxTokens(1)).ok());
}

TEST_F(SchedulerDisaggTest, AHeldIdCannotBeReusedAndAbortFreesIt) {
  make(16, 512);
  held_.watch(5, nullptr);
  ASSERT_TRUE(scheduler_->addRequest(5, tokenRange(6), disaggMaxTokens(1), &held_).ok());
  step();
  ASSERT_TRUE(scheduler_->isHeld(5));
  EXPECT_EQ(scheduler_->addRequest(5, tokenRange(3), disaggMaxTokens(1)).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(scheduler_->addRequest(5, tokenRange(3), disaggMaxTokens(1), &remote_).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(scheduler_->abort(5).ok());
  EXPECT_FALSE(scheduler_->isHeld(5));
  EXPECT_EQ(kv_->numFreeBlocks(), 16);
  EXPECT_EQ(scheduler_->abort(5).code(), absl::StatusCode::kNotFound);
}

TEST_F(SchedulerDisaggTest, ARemoteRequestIsScheduledOnlyAfterItsKvLands) {
  make(16, 512);
  auto* allocation = awaitRemote(1, tokenRange(10), 3);
  EXPECT_TRUE(step().seqs.empty());
  ASSERT_TRUE(allocation->has_value());
  EXPECT_EQ((*allocation)->num_cached_tokens, 0);
  EXPECT_EQ((*allocation)->block_ids.size(), 3u);
  EXPECT_EQ(remote_.numAwaiting(), 1);
  EXPECT_EQ(scheduler_->numWaitingForKv(), 1);
  EXPECT_EQ(scheduler_->numPrefillTokensQueued(), 0);
  EXPECT_FALSE(scheduler_->hasSchedulable());
  EXPECT_TRUE(step().seqs.empty());

  remote_.complete(1, token(42));
  const std::vector<RequestOutput> out = collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].token, 42);
  EXPECT_EQ(out[0].num_output_tokens, 1);
  EXPECT_EQ(out[0].finish_reason, generation::FinishReason::kNone);
  EXPECT_EQ(scheduler_->numWaitingForKv(), 0);
  EXPECT_EQ(remote_.numAwaiting(), 0);
  EXPECT_EQ(scheduler_->numRunning(), 1);
  // the prompt's two full blocks are in the prefix cache now.
  EXPECT_TRUE(kv_->blockPool().blockHash(kv_->blockTable(1)[1]).has_value());
  EXPECT_FALSE(kv_->blockPool().blockHash(kv_->blockTable(1)[2]).has_value());
  // the next step decodes the first token at position 10.
  Batch batch = step();
  ASSERT_EQ(batch.seqs.size(), 1u);
  EXPECT_EQ(batch.seqs[0].start_pos, 10);
  EXPECT_EQ(batch.seqs[0].tokens, std::vector<int32_t>{42});
  // a late second report changes nothing.
  remote_.complete(1, token(42));
  EXPECT_TRUE(collect().empty());

  // a second request with the same prompt hits the two committed blocks.
  auto* again = awaitRemote(2, tokenRange(10), 3);
  step();
  ASSERT_TRUE(again->has_value());
  EXPECT_EQ((*again)->num_cached_tokens, 8);
}

TEST_F(SchedulerDisaggTest, AFailedRemotePrefillPrefillsLocallyFirst) {
  make(16, 512);
  ASSERT_TRUE(scheduler_->addRequest(1, tokenRange(5, 50), disaggMaxTokens(2)).ok());
  awaitRemote(2, tokenRange(9), 2);
  // the local one's first chunk ran; the remote one holds its 3 blocks.
  ASSERT_EQ(step().seqs.size(), 1u);
  EXPECT_EQ(kv_->numFreeBlocks(), 11);
  remote_.fail(2);
  Batch batch = step();
  EXPECT_EQ(scheduler_->numWaitingForKv(), 0);
  ASSERT_EQ(batch.seqs.size(), 2u);
  // the failed one prefills its whole prompt: nothing was cached from the
  // blocks written from outside.
  EXPECT_EQ(batch.seqs[1].seq_id, 2u);
  EXPECT_EQ(batch.seqs[1].start_pos, 0);
  EXPECT_EQ(batch.seqs[1].tokens, tokenRange(9));
}

TEST_F(SchedulerDisaggTest, ARemoteRequestWhoseBlocksAreNotFreePrefillsLocally) {
  make(4, 4);
  auto* first = awaitRemote(1, tokenRange(12), 2);
  auto* second = awaitRemote(2, tokenRange(6, 30), 2);
  Batch batch = step();
  ASSERT_TRUE(first->has_value());
  // one block was left, not the two its prompt needs: the second is told
  // it prefills here, and its first chunk runs at once.
  ASSERT_TRUE(allocations_.contains(2));
  EXPECT_FALSE(second->has_value());
  ASSERT_EQ(batch.seqs.size(), 1u);
  EXPECT_EQ(batch.seqs[0].seq_id, 2u);
  EXPECT_EQ(batch.seqs[0].start_pos, 0);
  EXPECT_EQ(scheduler_->numWaitingForKv(), 1);
  EXPECT_EQ(remote_.numAwaiting(), 1);
  ASSERT_TRUE(scheduler_->abort(1).ok());
  EXPECT_EQ(remote_.numAwaiting(), 0);
  EXPECT_EQ(scheduler_->numWaitingForKv(), 0);
}

}  // namespace
}  // namespace tandem::engine
