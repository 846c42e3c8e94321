#include "kvcache/block_queue.h"

#include "gtest/gtest.h"

namespace tandem::kvcache {
namespace {

class BlockQueueTest : public ::testing::Test {};

TEST_F(BlockQueueTest, PopsInPushOrder) {
  BlockQueue q(5);
  q.pushBack(3);
  q.pushBack(0);
  q.pushBack(4);
  EXPECT_EQ(q.size(), 3);
  EXPECT_EQ(q.front(), 3);
  EXPECT_EQ(q.popFront(), 3);
  EXPECT_EQ(q.popFront(), 0);
  EXPECT_EQ(q.popFront(), 4);
  EXPECT_EQ(q.popFront(), std::nullopt);
  EXPECT_TRUE(q.empty());
}

TEST_F(BlockQueueTest, RemovesHeadMiddleAndTail) {
  BlockQueue q(6);
  for (BlockId id : {5, 1, 2, 0, 4}) q.pushBack(id);
  q.remove(2);
  EXPECT_EQ(q.toVector(), (std::vector<BlockId>{5, 1, 0, 4}));
  q.remove(5);
  EXPECT_EQ(q.toVector(), (std::vector<BlockId>{1, 0, 4}));
  q.remove(4);
  EXPECT_EQ(q.toVector(), (std::vector<BlockId>{1, 0}));
  EXPECT_FALSE(q.contains(4));
  EXPECT_TRUE(q.contains(0));
  q.pushBack(4);
  EXPECT_EQ(q.toVector(), (std::vector<BlockId>{1, 0, 4}));
}

TEST_F(BlockQueueTest, DiesWhenPushingAQueuedBlock) {
  BlockQueue q(2);
  q.pushBack(1);
  EXPECT_DEATH(q.pushBack(1), "TANDEM_CHECK");
}

}  // namespace
}  // namespace tandem::kvcache
