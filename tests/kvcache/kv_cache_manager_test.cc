#include "kvcache/kv_cache_manager.h"

#include <numeric>
#include <vector>

#include "gtest/gtest.h"

namespace tandem::kvcache {
namespace {

std::vector<int32_t> iota(int n, int32_t first = 1) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

std::vector<BlockId> table(const KvCacheManager& m, SeqId seq) {
  auto t = m.blockTable(seq);
  return {t.begin(), t.end()};
}

class KvCacheManagerTest : public ::testing::Test {
 protected:
  // 8 blocks of 4 tokens.
  KvCacheManagerTest() : kv_(8, 4) {}

  // runs a whole prompt through: slots, then commits it as computed.
  void prefill(SeqId seq, const std::vector<int32_t>& prompt) {
    const int cached = kv_.allocatePrompt(seq, prompt);
    ASSERT_TRUE(kv_.appendSlots(seq, static_cast<int>(prompt.size()) - cached).ok());
    kv_.commitFullBlocks(seq, prompt);
  }

  KvCacheManager kv_;
};

TEST_F(KvCacheManagerTest, ColdPromptHitsNothingAndHoldsNoSlots) {
  EXPECT_EQ(kv_.allocatePrompt(1, iota(10)), 0);
  EXPECT_EQ(kv_.numSlots(1), 0);
  EXPECT_TRUE(kv_.blockTable(1).empty());
  EXPECT_EQ(kv_.prefixQueriedTokens(), 10);
  EXPECT_EQ(kv_.prefixHitTokens(), 0);
}

TEST_F(KvCacheManagerTest, AppendSlotsAllocatesBlocksOnlyAtBlockBoundaries) {
  kv_.allocatePrompt(1, iota(6));
  ASSERT_TRUE(kv_.appendSlots(1, 6).ok());
  EXPECT_EQ(table(kv_, 1), (std::vector<BlockId>{0, 1}));
  ASSERT_TRUE(kv_.appendSlots(1, 2).ok());
  EXPECT_EQ(table(kv_, 1), (std::vector<BlockId>{0, 1}));
  ASSERT_TRUE(kv_.appendSlots(1, 1).ok());
  EXPECT_EQ(table(kv_, 1), (std::vector<BlockId>{0, 1, 2}));
  EXPECT_EQ(kv_.numSlots(1), 9);
  EXPECT_EQ(kv_.numFreeBlocks(), 5);
}

TEST_F(KvCacheManagerTest, AppendSlotsFailsCleanlyWhenOutOfBlocks) {
  kv_.allocatePrompt(1, iota(4));
  ASSERT_TRUE(kv_.appendSlots(1, 28).ok());
  const absl::Status s = kv_.appendSlots(1, 5);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("no space"), std::string_view::npos);
  EXPECT_EQ(kv_.numSlots(1), 28);
  EXPECT_EQ(kv_.blockTable(1).size(), 7u);
  EXPECT_EQ(kv_.numFreeBlocks(), 1);
  EXPECT_TRUE(kv_.appendSlots(1, 4).ok());
}

TEST_F(KvCacheManagerTest, SecondRequestHitsCommittedPrefixBlocks) {
  prefill(1, iota(10));  // blocks 0, 1 full and committed, block 2 partial.
  std::vector<int32_t> prompt = iota(8);
  prompt.push_back(77);
  prompt.push_back(78);
  EXPECT_EQ(kv_.allocatePrompt(2, prompt), 8);
  EXPECT_EQ(table(kv_, 2), (std::vector<BlockId>{0, 1}));
  EXPECT_EQ(kv_.blockPool().refCount(0), 2);
  EXPECT_EQ(kv_.numSlots(2), 8);
  EXPECT_EQ(kv_.prefixHitTokens(), 8);
}

TEST_F(KvCacheManagerTest, FullHitStillRecomputesTheLastToken) {
  prefill(1, iota(8));
  // all 8 tokens cached: the hit is capped at 7, rounded down to 4.
  EXPECT_EQ(kv_.allocatePrompt(2, iota(8)), 4);
  EXPECT_EQ(table(kv_, 2), (std::vector<BlockId>{0}));
  // 9 tokens: 8 may hit.
  EXPECT_EQ(kv_.allocatePrompt(3, iota(9)), 8);
}

TEST_F(KvCacheManagerTest, HitStopsAtFirstMissingBlock) {
  prefill(1, iota(12));
  std::vector<int32_t> prompt = iota(12);
  prompt[5] = 99;  // second block differs, third is equal but its chain is not.
  prompt.push_back(1);
  EXPECT_EQ(kv_.allocatePrompt(2, prompt), 4);
}

TEST_F(KvCacheManagerTest, FreedSequenceStaysCachedUntilEvicted) {
  prefill(1, iota(8));
  kv_.freeSequence(1);
  EXPECT_FALSE(kv_.contains(1));
  EXPECT_EQ(kv_.blockPool().numCached(), 2);
  EXPECT_EQ(kv_.numFreeBlocks(), 8);
  // freed tail first: block 1 is evicted before the shared prefix block 0.
  EXPECT_EQ(kv_.blockPool().lruOrder(), (std::vector<BlockId>{1, 0}));
  EXPECT_EQ(kv_.allocatePrompt(2, iota(9)), 8);
  EXPECT_EQ(table(kv_, 2), (std::vector<BlockId>{0, 1}));
}

TEST_F(KvCacheManagerTest, EvictionUnderPressureDropsPrefixHits) {
  prefill(1, iota(8));
  kv_.freeSequence(1);
  kv_.allocatePrompt(2, iota(29, 100));
  ASSERT_TRUE(kv_.appendSlots(2, 29).ok());  // 8 blocks: evicts both cached.
  EXPECT_EQ(kv_.blockPool().numCached(), 0);
  kv_.freeSequence(2);
  EXPECT_EQ(kv_.allocatePrompt(3, iota(9)), 0);
}

TEST_F(KvCacheManagerTest, CommitsOnlyNewlyFullBlocksAsTokensAreComputed) {
  kv_.allocatePrompt(1, iota(3));
  ASSERT_TRUE(kv_.appendSlots(1, 6).ok());
  std::vector<int32_t> tokens = iota(6);
  kv_.commitFullBlocks(1, tokens);
  EXPECT_EQ(kv_.blockPool().blockHash(0), hashBlock(kRootParentHash, iota(4)));
  EXPECT_EQ(kv_.blockPool().blockHash(1), std::nullopt);
  ASSERT_TRUE(kv_.appendSlots(1, 2).ok());
  tokens.push_back(7);
  tokens.push_back(8);
  kv_.commitFullBlocks(1, tokens);
  EXPECT_EQ(kv_.blockPool().blockHash(1), blockHashes(tokens, 4)[1]);
}

TEST_F(KvCacheManagerTest, PrefixCachingOffNeverHits) {
  KvCacheManager kv(8, 4, /*enable_prefix_caching=*/false);
  kv.allocatePrompt(1, iota(8));
  ASSERT_TRUE(kv.appendSlots(1, 8).ok());
  kv.commitFullBlocks(1, iota(8));
  EXPECT_EQ(kv.blockPool().blockHash(0), std::nullopt);
  EXPECT_EQ(kv.allocatePrompt(2, iota(9)), 0);
}

TEST_F(KvCacheManagerTest, BlocksForTokensRoundsUp) {
  EXPECT_EQ(kv_.blocksForTokens(0), 0);
  EXPECT_EQ(kv_.blocksForTokens(4), 1);
  EXPECT_EQ(kv_.blocksForTokens(5), 2);
}

}  // namespace
}  // namespace tandem::kvcache
