// EngineLoop's decode-worker side, with a second loop as the prefill worker:
// blocks allocated through the RemotePrefillConnector, filled with P's held
// blocks by a plain memcpy (as the shm transport does), complete to the
// oracle; a failed remote prefill never lets its blocks into the prefix
// cache.
#include <algorithm>
#include <cstring>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "kvcache/prefix_hash.h"
#include "server/engine/engine_loop.h"
#include "tests/server/engine/engine_loop_test_support.h"

namespace tandem::engine {
namespace {

using testing_support::Case;
using testing_support::Collector;
using testing_support::eventually;
using testing_support::greedy;

constexpr int kBlockSize = 4;

class EngineLoopRemotePrefillTest : public ::testing::Test {
 protected:
  void SetUp() override {
    prefill_ = testing_support::makeLoop(testing_support::smallOptions(kBlockSize, 7));
    ASSERT_NE(prefill_, nullptr);
    startDecode(0);
  }
  void startDecode(int num_blocks) {
    decode_.reset();
    EngineAssemblyOptions options = testing_support::smallOptions(kBlockSize, 7);
    options.kv_budget_bytes = num_blocks * blockBytes();
    decode_ = testing_support::makeLoop(options);
    ASSERT_NE(decode_, nullptr);
  }
  size_t blockBytes() const {
    return prefill_->localEngine().runner().kvLayout().blockBytes();
  }
  void* block(EngineLoop& loop, int32_t id) const {
    return loop.localEngine().runner().blockData(id);
  }

  // prefills `prompt` on P and returns its first output and block table;
  // the blocks stay held until P releases them.
  generation::TokenOutput prefillOnP(generation::SeqId id, const std::vector<int32_t>& prompt,
                          const generation::SamplingParams& params, std::vector<int32_t>* table) {
    std::promise<generation::TokenOutput> done;
    EXPECT_TRUE(testing_support::submitPrefill(
                    *prefill_, id, prompt, params,
                    [table](int, std::span<const int32_t> t) { table->assign(t.begin(), t.end()); },
                    [&done](const generation::TokenOutput& out) { done.set_value(out); })
                    .ok());
    return done.get_future().get();
  }

  // the whole disaggregated flow for one request: D allocates, P prefills,
  // the blocks D lacks are copied, D completes. returns D's allocation.
  RemotePrefillConnector::Allocation remotePrefill(generation::SeqId id, const std::vector<int32_t>& prompt,
                                                  const generation::SamplingParams& params, Collector& out) {
    auto allocation = testing_support::awaitKv(*decode_, id, prompt, params, out.callback());
    EXPECT_TRUE(allocation.ok()) << allocation.status();
    if (!allocation.ok()) return {};
    std::vector<int32_t> p_table;
    const generation::TokenOutput first = prefillOnP(id, prompt, params, &p_table);
    EXPECT_EQ(p_table.size(), allocation->block_ids.size());
    for (size_t b = allocation->num_cached_tokens / kBlockSize; b < p_table.size(); ++b) {
      std::memcpy(block(*decode_, allocation->block_ids[b]), block(*prefill_, p_table[b]),
                  blockBytes());
    }
    prefill_->heldPrefills().release(id);
    decode_->remotePrefill().complete(id, first);
    return *allocation;
  }

  std::unique_ptr<EngineLoop> prefill_;
  std::unique_ptr<EngineLoop> decode_;
};

TEST_F(EngineLoopRemotePrefillTest, ConcurrentRemotePrefillsMatchTheOracle) {
  const int total = decode_->stats().num_blocks;
  std::vector<Case> cases = testing_support::oracleCases(0);
  for (const Case& c : testing_support::oracleCases(20)) cases.push_back(c);
  std::vector<Collector> outs(cases.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < cases.size(); ++i) {
    threads.emplace_back([&, i] {
      remotePrefill(i, cases[i].prompt, greedy(static_cast<int>(cases[i].expected.size())),
                    outs[i]);
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < cases.size(); ++i) {
    ASSERT_TRUE(outs[i].wait()) << i;
    EXPECT_EQ(outs[i].tokens, cases[i].expected) << i;
    EXPECT_EQ(outs[i].finish, generation::FinishReason::kLength);
    EXPECT_EQ(outs[i].calls_after_finish, 0);
    const generation::TokenOutput first = outs[i].first();
    EXPECT_EQ(first.num_output_tokens, 1);
    EXPECT_EQ(first.num_prompt_tokens, static_cast<int>(cases[i].prompt.size()));
  }
  ASSERT_TRUE(eventually([&] { return decode_->stats().num_free_blocks == total; }));
  ASSERT_TRUE(eventually([&] { return prefill_->stats().num_held_prefills == 0; }));
  EXPECT_EQ(decode_->stats().num_awaiting_kv, 0);
}

TEST_F(EngineLoopRemotePrefillTest, ASecondRequestHitsTheCacheAndNeedsOnlyTheRestOfTheBlocks) {
  const Case c = testing_support::oracleCases(20)[1];  // 32 tokens: 8 blocks
  const generation::SamplingParams params = greedy(static_cast<int>(c.expected.size()));
  Collector first;
  const auto a1 = remotePrefill(1, c.prompt, params, first);
  ASSERT_TRUE(first.wait());
  EXPECT_EQ(a1.num_cached_tokens, 0);
  EXPECT_EQ(first.first().num_cached_tokens, 0);
  ASSERT_EQ(first.tokens, c.expected);

  // the same prompt: D cached its full prompt blocks on completion (all but
  // the last, which holds the token that must be recomputed for logits).
  Collector second;
  const auto a2 = remotePrefill(2, c.prompt, params, second);
  ASSERT_TRUE(second.wait());
  EXPECT_EQ(a2.num_cached_tokens, 28);
  EXPECT_EQ(second.first().num_cached_tokens, 28);
  EXPECT_EQ(second.tokens, c.expected);
  // a longer prompt extending the first request's prompt and output hits
  // everything D computed for it (10 blocks of its 42 tokens).
  const Case longer = testing_support::oracleCases(30)[1];
  Collector third;
  const auto a3 = remotePrefill(3, longer.prompt, greedy(static_cast<int>(longer.expected.size())),
                                third);
  ASSERT_TRUE(third.wait());
  EXPECT_EQ(a3.num_cached_tokens, 40);
  EXPECT_EQ(third.tokens, longer.expected);
}

TEST_F(EngineLoopRemotePrefillTest, FailedRemotePrefillRecomputesLocallyAndNeverCachesGarbage) {
  const Case c = testing_support::oracleCases(20)[4];
  const generation::SamplingParams params = greedy(static_cast<int>(c.expected.size()));
  Collector out;
  auto allocation = testing_support::awaitKv(*decode_, 1, c.prompt, params, out.callback());
  ASSERT_TRUE(allocation.ok()) << allocation.status();
  // P died after writing garbage (NaN bits) into every block.
  for (int32_t id : allocation->block_ids) std::memset(block(*decode_, id), 0xFF, blockBytes());
  decode_->remotePrefill().fail(1);
  ASSERT_TRUE(out.wait());
  EXPECT_EQ(out.tokens, c.expected);
  EXPECT_EQ(out.first().num_cached_tokens, 0);
  EXPECT_EQ(out.calls_after_finish, 0);

  // the local prefill cached the prompt: a later request hits it and is right.
  Collector again;
  ASSERT_TRUE(decode_->submit(2, c.prompt, params, again.callback()).ok());
  ASSERT_TRUE(again.wait());
  EXPECT_GT(again.first().num_cached_tokens, 0);
  EXPECT_EQ(again.tokens, c.expected);
  // late calls for a request no longer awaiting KV are ignored.
  decode_->remotePrefill().complete(1, out.first());
  decode_->remotePrefill().fail(1);
}

TEST_F(EngineLoopRemotePrefillTest, AFailureAfterACacheHitKeepsTheHitAndDropsTheRest) {
  const Case c = testing_support::oracleCases(20)[6];
  const generation::SamplingParams params = greedy(static_cast<int>(c.expected.size()));
  Collector warm;
  ASSERT_TRUE(decode_->submit(1, c.prompt, params, warm.callback()).ok());
  ASSERT_TRUE(warm.wait());
  Collector out;
  auto allocation = testing_support::awaitKv(*decode_, 2, c.prompt, params, out.callback());
  ASSERT_TRUE(allocation.ok());
  ASSERT_GT(allocation->num_cached_tokens, 0);
  for (size_t b = allocation->num_cached_tokens / kBlockSize; b < allocation->block_ids.size(); ++b) {
    std::memset(block(*decode_, allocation->block_ids[b]), 0xFF, blockBytes());
  }
  decode_->remotePrefill().fail(2);
  ASSERT_TRUE(out.wait());
  EXPECT_EQ(out.tokens, c.expected);
  EXPECT_EQ(out.first().num_cached_tokens, allocation->num_cached_tokens);
}

TEST_F(EngineLoopRemotePrefillTest, WhenTheBlocksAreNotFreeTheRequestPrefillsLocally) {
  startDecode(12);
  ASSERT_EQ(decode_->stats().num_blocks, 12);
  const auto cases = testing_support::oracleCases(20);  // 24..32 tokens: 6..8 blocks
  Collector a;
  auto first = testing_support::awaitKv(*decode_, 1, cases[1].prompt, greedy(8), a.callback());
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->block_ids.size(), 8u);
  ASSERT_TRUE(eventually([&] { return decode_->stats().num_awaiting_kv == 1; }));
  EXPECT_EQ(decode_->stats().num_free_blocks, 4);
  // the second's whole prompt does not fit beside it: it is declined and
  // queued to prefill here, where it waits for the awaiting one's blocks.
  Collector b;
  auto second = testing_support::awaitKv(*decode_, 2, cases[3].prompt, greedy(8), b.callback());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kResourceExhausted);
  // the same id again is refused (a request the cache could never hold is
  // the rule's to refuse, before the loop).
  Collector c;
  ASSERT_TRUE(decode_->submit(1, cases[0].prompt, greedy(4), c.callback()).ok());
  ASSERT_TRUE(c.wait());
  EXPECT_EQ(c.finish, generation::FinishReason::kError);
  EXPECT_EQ(generation::limitKind(
                generation::checkRequest(decode_->limits(), cases[0].prompt, greedy(40))),
            generation::LimitKind::kCacheFit);
  EXPECT_EQ(b.numOutputs(), 0u);
  decode_->cancel(1);
  ASSERT_TRUE(a.wait());
  EXPECT_EQ(a.finish, generation::FinishReason::kAbort);
  EXPECT_EQ(a.numOutputs(), 1u);
  ASSERT_TRUE(b.wait());
  EXPECT_EQ(b.finish, generation::FinishReason::kLength);
  EXPECT_EQ(b.tokens, std::vector<int32_t>(cases[3].expected.begin(), cases[3].expected.begin() + 8));
  ASSERT_TRUE(eventually([&] { return decode_->stats().num_free_blocks == 12; }));
}

TEST_F(EngineLoopRemotePrefillTest, CancelWorksInEveryStateWithExactlyOneFinalOutput) {
  const int total = decode_->stats().num_blocks;
  const auto cases = testing_support::oracleCases(20);
  // awaiting KV.
  Collector awaiting;
  ASSERT_TRUE(testing_support::awaitKv(*decode_, 1, cases[0].prompt, greedy(8), awaiting.callback()).ok());
  decode_->cancel(1);
  ASSERT_TRUE(awaiting.wait());
  EXPECT_EQ(awaiting.finish, generation::FinishReason::kAbort);
  decode_->remotePrefill().complete(1, generation::TokenOutput{1, cases[0].expected[0]});  // ignored.
  // fell back to local prefill (waiting or running), with a long generation.
  Collector fallback;
  generation::SamplingParams long_run = greedy(400);
  ASSERT_TRUE(testing_support::awaitKv(*decode_, 2, cases[1].prompt, long_run, fallback.callback()).ok());
  decode_->remotePrefill().fail(2);
  ASSERT_TRUE(eventually([&] { return fallback.numOutputs() >= 3; }));
  decode_->cancel(2);
  ASSERT_TRUE(fallback.wait());
  EXPECT_EQ(fallback.finish, generation::FinishReason::kAbort);
  // completed remotely and decoding.
  Collector decoding;
  remotePrefill(3, cases[2].prompt, long_run, decoding);
  ASSERT_TRUE(eventually([&] { return decoding.numOutputs() >= 3; }));
  decode_->cancel(3);
  ASSERT_TRUE(decoding.wait());
  EXPECT_EQ(decoding.finish, generation::FinishReason::kAbort);
  ASSERT_TRUE(eventually([&] { return decode_->stats().num_free_blocks == total; }));
  // an awaiting request at stop() ends with kAbort.
  Collector at_stop;
  ASSERT_TRUE(testing_support::awaitKv(*decode_, 4, cases[3].prompt, greedy(8), at_stop.callback()).ok());
  decode_->stop();
  ASSERT_TRUE(at_stop.wait());
  EXPECT_EQ(at_stop.finish, generation::FinishReason::kAbort);
  EXPECT_EQ(decode_->stats().num_free_blocks, total);
  for (Collector* c : {&awaiting, &fallback, &decoding, &at_stop}) {
    std::lock_guard lock(c->mu);
    EXPECT_EQ(c->calls_after_finish, 0);
    int finals = 0;
    for (const auto& o : c->outputs) finals += o.finished() ? 1 : 0;
    EXPECT_EQ(finals, 1);
  }
}

TEST_F(EngineLoopRemotePrefillTest, AFirstTokenThatStopsFinishesAtOnceAndFreesTheBlocks) {
  const int total = decode_->stats().num_blocks;
  const Case c = testing_support::oracleCases(20)[5];
  generation::SamplingParams stop_on_first = greedy(30);
  stop_on_first.stop_token_ids = {c.expected[0]};
  Collector stopped;
  remotePrefill(1, c.prompt, stop_on_first, stopped);
  ASSERT_TRUE(stopped.wait());
  EXPECT_EQ(stopped.finish, generation::FinishReason::kStop);
  EXPECT_EQ(stopped.tokens, std::vector<int32_t>{c.expected[0]});
  Collector one;
  remotePrefill(2, c.prompt, greedy(1), one);
  ASSERT_TRUE(one.wait());
  EXPECT_EQ(one.finish, generation::FinishReason::kLength);
  EXPECT_EQ(one.numOutputs(), 1u);
  ASSERT_TRUE(eventually([&] { return decode_->stats().num_free_blocks == total; }));
  EXPECT_EQ(decode_->stats().num_awaiting_kv, 0);
  EXPECT_EQ(decode_->stats().num_running, 0);
  // an out-of-vocabulary first token is not trusted: D prefills locally.
  Collector bad;
  ASSERT_TRUE(testing_support::awaitKv(*decode_, 3, c.prompt, greedy(4), bad.callback()).ok());
  decode_->remotePrefill().complete(3, generation::TokenOutput{3, decode_->vocabSize()});
  ASSERT_TRUE(bad.wait());
  EXPECT_EQ(bad.tokens, std::vector<int32_t>(c.expected.begin(), c.expected.begin() + 4));
}

TEST_F(EngineLoopRemotePrefillTest, SeededSamplingContinuesAsAnAggregatedRun) {
  const Case c = testing_support::oracleCases(20)[7];
  generation::SamplingParams seeded;
  seeded.temperature = 1.0f;
  seeded.seed = 1234;
  seeded.max_tokens = 24;
  seeded.ignore_eos = true;
  Collector aggregated;
  ASSERT_TRUE(decode_->submit(1, c.prompt, seeded, aggregated.callback()).ok());
  ASSERT_TRUE(aggregated.wait());
  Collector disaggregated;
  remotePrefill(2, c.prompt, seeded, disaggregated);
  ASSERT_TRUE(disaggregated.wait());
  EXPECT_EQ(disaggregated.tokens, aggregated.tokens);
  EXPECT_NE(aggregated.tokens, std::vector<int32_t>(c.expected.begin(), c.expected.begin() + 24));
}

TEST_F(EngineLoopRemotePrefillTest, CompletionCommitsThePromptBlocksAndTheLogHasTheirEvents) {
  const Case c = testing_support::oracleCases(20)[1];  // 32 tokens: 8 full blocks
  Collector out;
  remotePrefill(1, c.prompt, greedy(1), out);
  ASSERT_TRUE(out.wait());
  ASSERT_TRUE(eventually([&] { return decode_->stats().num_awaiting_kv == 0; }));
  kvcache::KvSnapshot snap = decode_->kvEvents().snapshot();
  std::vector<kvcache::BlockStored> expected;
  kvcache::BlockHash parent = kvcache::kRootParentHash;
  for (size_t b = 0; b < 8; ++b) {
    const kvcache::BlockHash h = kvcache::hashBlock(
        parent, std::span<const int32_t>(c.prompt).subspan(b * kBlockSize, kBlockSize));
    expected.push_back({h, parent});
    parent = h;
  }
  auto byHash = [](const kvcache::BlockStored& a, const kvcache::BlockStored& b) {
    return a.hash < b.hash;
  };
  std::sort(snap.blocks.begin(), snap.blocks.end(), byHash);
  std::sort(expected.begin(), expected.end(), byHash);
  EXPECT_EQ(snap.blocks, expected);
  EXPECT_EQ(snap.last_event_id, 8u);
  auto events = decode_->kvEvents().readAfter(0, 100, std::chrono::milliseconds(0));
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 8u);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ((*events)[i].event_id, i + 1);
  // P committed the same blocks when it prefilled.
  EXPECT_EQ(prefill_->kvEvents().snapshot().blocks.size(), 8u);
}

}  // namespace
}  // namespace tandem::engine
