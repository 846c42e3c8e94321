#include "kvcache/block_pool.h"

#include <vector>

#include "gtest/gtest.h"

namespace tandem::kvcache {
namespace {

class RecordingListener : public KvEventListener {
 public:
  void onKvEvent(const KvEvent& event) override { events.push_back(event); }
  std::vector<KvEvent> events;
};

class BlockPoolTest : public ::testing::Test {
 protected:
  BlockPoolTest() : pool_(4) { pool_.setEventListener(&listener_); }

  std::vector<BlockId> allocate(int n) {
    auto blocks = pool_.allocate(n);
    EXPECT_TRUE(blocks.ok()) << blocks.status();
    return blocks.ok() ? *blocks : std::vector<BlockId>{};
  }

  void expectCounts(int free, int cached, int used) {
    EXPECT_EQ(pool_.numFree(), free);
    EXPECT_EQ(pool_.numCached(), cached);
    EXPECT_EQ(pool_.numUsed(), used);
  }

  BlockPool pool_;
  RecordingListener listener_;
};

TEST_F(BlockPoolTest, FreshPoolAllocatesIdsInOrder) {
  expectCounts(4, 0, 0);
  EXPECT_EQ(allocate(3), (std::vector<BlockId>{0, 1, 2}));
  expectCounts(1, 0, 3);
  EXPECT_EQ(pool_.refCount(0), 1);
}

TEST_F(BlockPoolTest, FailsWithoutChangingAnythingWhenTooFewBlocks) {
  allocate(3);
  auto more = pool_.allocate(2);
  EXPECT_EQ(more.status().code(), absl::StatusCode::kResourceExhausted);
  expectCounts(1, 0, 3);
  EXPECT_EQ(allocate(1), (std::vector<BlockId>{3}));
}

TEST_F(BlockPoolTest, FreedUncachedBlocksReturnToFreeQueueTail) {
  allocate(4);
  pool_.free(std::vector<BlockId>{2, 0});
  expectCounts(2, 0, 2);
  EXPECT_EQ(pool_.freeOrder(), (std::vector<BlockId>{2, 0}));
  EXPECT_EQ(allocate(2), (std::vector<BlockId>{2, 0}));
  EXPECT_TRUE(listener_.events.empty());
}

TEST_F(BlockPoolTest, CommittedBlockIsFindableAndEmitsBlockStored) {
  allocate(2);
  EXPECT_TRUE(pool_.commit(1, 111, kRootParentHash));
  EXPECT_EQ(pool_.findCached(111), 1);
  EXPECT_EQ(pool_.blockHash(1), 111u);
  EXPECT_EQ(pool_.findCached(222), std::nullopt);
  ASSERT_EQ(listener_.events.size(), 1u);
  EXPECT_EQ(listener_.events[0], KvEvent(BlockStored{111, kRootParentHash}));
}

TEST_F(BlockPoolTest, DuplicateHashIsRejectedAndBlockStaysUncached) {
  allocate(2);
  EXPECT_TRUE(pool_.commit(0, 111, 0));
  EXPECT_FALSE(pool_.commit(1, 111, 0));
  EXPECT_EQ(pool_.findCached(111), 0);
  EXPECT_EQ(pool_.blockHash(1), std::nullopt);
  pool_.free(std::vector<BlockId>{1, 0});
  expectCounts(3, 1, 0);
  EXPECT_EQ(listener_.events.size(), 1u);
}

TEST_F(BlockPoolTest, FreedCachedBlockStaysFindableInLru) {
  allocate(2);
  pool_.commit(0, 111, 0);
  pool_.free(std::vector<BlockId>{0});
  expectCounts(2, 1, 1);
  EXPECT_EQ(pool_.lruOrder(), (std::vector<BlockId>{0}));
  EXPECT_EQ(pool_.findCached(111), 0);
}

TEST_F(BlockPoolTest, TouchTakesCachedBlockOutOfLru) {
  allocate(1);
  pool_.commit(0, 111, 0);
  pool_.free(std::vector<BlockId>{0});
  pool_.touch(*pool_.findCached(111));
  expectCounts(3, 0, 1);
  EXPECT_EQ(pool_.refCount(0), 1);
  EXPECT_TRUE(pool_.lruOrder().empty());
  pool_.touch(0);
  EXPECT_EQ(pool_.refCount(0), 2);
  pool_.free(std::vector<BlockId>{0});
  expectCounts(3, 0, 1);
}

TEST_F(BlockPoolTest, AllocatesFromFreeQueueBeforeEvicting) {
  allocate(2);
  pool_.commit(0, 100, 0);
  pool_.free(std::vector<BlockId>{0});
  EXPECT_EQ(allocate(2), (std::vector<BlockId>{2, 3}));
  EXPECT_EQ(pool_.findCached(100), 0);
}

TEST_F(BlockPoolTest, EvictsLeastRecentlyUsedBlockFirst) {
  allocate(4);
  pool_.commit(0, 100, 0);
  pool_.commit(1, 101, 100);
  pool_.commit(2, 102, 0);
  // freed in the order 2, 0, 1: block 2 is least recently used.
  pool_.free(std::vector<BlockId>{2, 0, 1});
  EXPECT_EQ(pool_.lruOrder(), (std::vector<BlockId>{2, 0, 1}));
  // a hit refreshes block 2: freed again, it moves to the lru tail.
  pool_.touch(2);
  pool_.free(std::vector<BlockId>{2});
  EXPECT_EQ(pool_.lruOrder(), (std::vector<BlockId>{0, 1, 2}));
  listener_.events.clear();

  EXPECT_EQ(allocate(2), (std::vector<BlockId>{0, 1}));
  EXPECT_EQ(pool_.findCached(100), std::nullopt);
  EXPECT_EQ(pool_.findCached(101), std::nullopt);
  EXPECT_EQ(pool_.findCached(102), 2);
  EXPECT_EQ(pool_.blockHash(0), std::nullopt);
  EXPECT_EQ(listener_.events,
            (std::vector<KvEvent>{BlockRemoved{100}, BlockRemoved{101}}));
  expectCounts(0, 1, 3);
}

TEST_F(BlockPoolTest, ResetPrefixCacheRefusesWhileBlocksAreUsed) {
  allocate(2);
  pool_.commit(0, 100, 0);
  pool_.free(std::vector<BlockId>{0});
  EXPECT_FALSE(pool_.resetPrefixCache());
  EXPECT_EQ(pool_.findCached(100), 0);
  pool_.free(std::vector<BlockId>{1});
  listener_.events.clear();
  EXPECT_TRUE(pool_.resetPrefixCache());
  EXPECT_EQ(pool_.findCached(100), std::nullopt);
  expectCounts(4, 0, 0);
  EXPECT_EQ(listener_.events, (std::vector<KvEvent>{AllCleared{}}));
}

TEST_F(BlockPoolTest, DiesOnDoubleFree) {
  allocate(1);
  pool_.free(std::vector<BlockId>{0});
  EXPECT_DEATH(pool_.free(std::vector<BlockId>{0}), "TANDEM_CHECK");
}

}  // namespace
}  // namespace tandem::kvcache
