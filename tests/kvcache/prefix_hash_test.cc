#include "kvcache/prefix_hash.h"

#include <vector>

#include "gtest/gtest.h"

namespace tandem::kvcache {
namespace {

// golden values computed with a separate program that hashes
// le64(parent) ‖ le32 tokens with XXH3_64bits_withSeed(.., kPrefixHashSeed).
// they pin the wire format: the router and every worker must produce them.
constexpr BlockHash kHashOf1234 = 0xd881e9078f75d68aULL;
constexpr BlockHash kHashOf5678AfterFirst = 0xd171ea3efc13900dULL;

class PrefixHashTest : public ::testing::Test {};

TEST_F(PrefixHashTest, SeedSpellsTandemkv) {
  EXPECT_EQ(kPrefixHashSeed, 0x74616e64656d6b76ULL);
  EXPECT_EQ(kRootParentHash, 0u);
}

TEST_F(PrefixHashTest, FirstBlockHashesRootParentAndTokens) {
  const std::vector<int32_t> block = {1, 2, 3, 4};
  EXPECT_EQ(hashBlock(kRootParentHash, block), kHashOf1234);
}

TEST_F(PrefixHashTest, NegativeAndLargeTokenIdsEncodeAsLittleEndianInt32) {
  const std::vector<int32_t> block = {128000, -1, 7, 65535};
  EXPECT_EQ(hashBlock(kRootParentHash, block), 0xdd5365c86a3bb649ULL);
}

TEST_F(PrefixHashTest, ChainsEachBlockOnItsParent) {
  const std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(blockHashes(tokens, 4),
            (std::vector<BlockHash>{kHashOf1234, kHashOf5678AfterFirst}));
}

TEST_F(PrefixHashTest, OnlyFullBlocksAreHashed) {
  const std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(blockHashes(tokens, 4), (std::vector<BlockHash>{kHashOf1234}));
  EXPECT_TRUE(blockHashes(std::vector<int32_t>{1, 2, 3}, 4).empty());
}

TEST_F(PrefixHashTest, SameBlockUnderDifferentParentsHashesDifferently) {
  const std::vector<int32_t> a = {9, 9, 9, 9, 5, 6, 7, 8};
  const auto h = blockHashes(a, 4);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_NE(h[1], kHashOf5678AfterFirst);
  EXPECT_NE(h[1], hashBlock(kRootParentHash, std::vector<int32_t>{5, 6, 7, 8}));
}

TEST_F(PrefixHashTest, IncrementalFormMatchesOneShotAndReportsAdded) {
  std::vector<int32_t> tokens;
  std::vector<BlockHash> hashes;
  int total_added = 0;
  for (int32_t t = 0; t < 23; ++t) {
    tokens.push_back(t * 31 + 1);
    total_added += extendBlockHashes(tokens, 4, hashes);
  }
  EXPECT_EQ(total_added, 5);
  EXPECT_EQ(hashes, blockHashes(tokens, 4));
  EXPECT_EQ(extendBlockHashes(tokens, 4, hashes), 0);
}

}  // namespace
}  // namespace tandem::kvcache
