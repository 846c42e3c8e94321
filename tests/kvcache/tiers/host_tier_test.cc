#include "kvcache/tiers/host_tier.h"

#include <vector>

#include "gtest/gtest.h"
#include "kvcache/kv_event_log.h"

namespace tandem::kvcache {
namespace {

constexpr size_t kBytes = 64;

std::vector<std::byte> pattern(int seed) {
  std::vector<std::byte> out(kBytes);
  for (size_t i = 0; i < kBytes; ++i) out[i] = static_cast<std::byte>((seed * 31 + i) & 0xff);
  return out;
}

bool storeBlock(HostTier& tier, BlockHash hash, int seed) {
  const std::vector<std::byte> data = pattern(seed);
  bool called = false;
  const bool taken = tier.store(hash, hash - 1, data, [&](absl::Status s) {
    EXPECT_TRUE(s.ok());
    called = true;
  });
  EXPECT_EQ(called, taken);
  return taken;
}

absl::Status loadBlock(HostTier& tier, BlockHash hash, std::vector<std::byte>& out) {
  out.assign(kBytes, std::byte{0});
  absl::Status result = absl::UnknownError("done not called");
  tier.load(hash, out, [&](absl::Status s) { result = s; });
  return result;
}

TEST(HostTierTest, LoadReturnsTheStoredBytesExactly) {
  HostTier tier(kBytes, 4);
  ASSERT_TRUE(storeBlock(tier, 100, 1));
  ASSERT_TRUE(storeBlock(tier, 200, 2));
  std::vector<std::byte> out;
  ASSERT_TRUE(loadBlock(tier, 100, out).ok());
  EXPECT_EQ(out, pattern(1));
  ASSERT_TRUE(loadBlock(tier, 200, out).ok());
  EXPECT_EQ(out, pattern(2));
  EXPECT_EQ(tier.numBlocks(), 2);
  EXPECT_TRUE(tier.contains(100));
  EXPECT_FALSE(tier.contains(300));
}

TEST(HostTierTest, LoadOfAnAbsentBlockIsNotFound) {
  HostTier tier(kBytes, 2);
  std::vector<std::byte> out;
  EXPECT_EQ(loadBlock(tier, 7, out).code(), absl::StatusCode::kNotFound);
}

TEST(HostTierTest, EvictsLeastRecentlyUsedBlockFirstAndHandsItToTheSink) {
  HostTier tier(kBytes, 3);
  std::vector<std::pair<BlockHash, std::vector<std::byte>>> sunk;
  tier.setEvictionSink([&](BlockHash hash, BlockHash parent, std::span<const std::byte> data) {
    EXPECT_EQ(parent, hash - 1);
    sunk.emplace_back(hash, std::vector<std::byte>(data.begin(), data.end()));
  });
  ASSERT_TRUE(storeBlock(tier, 10, 1));
  ASSERT_TRUE(storeBlock(tier, 20, 2));
  ASSERT_TRUE(storeBlock(tier, 30, 3));
  // a load makes 10 the most recently used: 20 goes first.
  std::vector<std::byte> out;
  ASSERT_TRUE(loadBlock(tier, 10, out).ok());
  EXPECT_EQ(tier.lruOrder(), (std::vector<BlockHash>{20, 30, 10}));
  ASSERT_TRUE(storeBlock(tier, 40, 4));
  ASSERT_EQ(sunk.size(), 1u);
  EXPECT_EQ(sunk[0].first, 20u);
  EXPECT_EQ(sunk[0].second, pattern(2));
  EXPECT_FALSE(tier.contains(20));
  EXPECT_EQ(tier.lruOrder(), (std::vector<BlockHash>{30, 10, 40}));
  // storing a held hash again only refreshes it.
  ASSERT_TRUE(storeBlock(tier, 30, 3));
  EXPECT_EQ(tier.lruOrder(), (std::vector<BlockHash>{10, 40, 30}));
  EXPECT_EQ(tier.evictDownTo(1), 2);
  EXPECT_EQ(tier.lruOrder(), (std::vector<BlockHash>{30}));
  ASSERT_EQ(sunk.size(), 3u);
  EXPECT_EQ(sunk[1].first, 10u);
  EXPECT_EQ(sunk[2].first, 40u);
}

TEST(HostTierTest, PublishesItsBlocksWithTheHostTier) {
  HostTier tier(kBytes, 2);
  KvEventLog log;
  tier.setEventListener(&log);
  ASSERT_TRUE(storeBlock(tier, 10, 1));
  ASSERT_TRUE(storeBlock(tier, 20, 2));
  ASSERT_TRUE(storeBlock(tier, 30, 3));  // evicts 10
  tier.remove(20);
  tier.remove(99);  // absent: nothing
  auto events = log.readAfter(0, 100, std::chrono::milliseconds(0));
  ASSERT_TRUE(events.ok());
  std::vector<KvEvent> got;
  for (const auto& e : *events) got.push_back(e.event);
  const std::vector<KvEvent> want = {
      BlockStored{10, 9, KvTier::kHost}, BlockStored{20, 19, KvTier::kHost},
      BlockRemoved{10, KvTier::kHost},   BlockStored{30, 29, KvTier::kHost},
      BlockRemoved{20, KvTier::kHost}};
  EXPECT_EQ(got, want);
  const KvSnapshot snap = log.snapshot();
  ASSERT_EQ(snap.blocks.size(), 1u);
  EXPECT_EQ(snap.blocks[0], (BlockStored{30, 29, KvTier::kHost}));
}

TEST(HostTierTest, RefusesStoresWithoutCapacityOrOfTheWrongSize) {
  HostTier empty(kBytes, 0);
  EXPECT_FALSE(storeBlock(empty, 1, 1));
  HostTier tier(kBytes, 1);
  std::vector<std::byte> short_block(kBytes - 1);
  EXPECT_FALSE(tier.store(1, 0, short_block, [](absl::Status) { ADD_FAILURE(); }));
  EXPECT_EQ(tier.numBlocks(), 0);
}

// a copy that runs while the caller goes on: the reserved slot is neither
// held nor evictable until commit, in the arena the caller gave.
TEST(HostTierTest, AReservedSlotIsHeldOnlyOnceCommittedAndNeverEvictedBefore) {
  std::vector<std::byte> memory(2 * kBytes);
  HostTier tier(kBytes, 2, HostTier::Arena(memory.data(), [](std::byte*) {}));
  std::vector<BlockHash> sunk;
  tier.setEvictionSink([&](BlockHash hash, BlockHash, std::span<const std::byte>) {
    sunk.push_back(hash);
  });
  ASSERT_TRUE(storeBlock(tier, 10, 1));
  const std::span<std::byte> slot20 = tier.reserve(20);
  ASSERT_EQ(slot20.size(), kBytes);
  EXPECT_TRUE(slot20.data() >= memory.data() && slot20.data() < memory.data() + memory.size());
  EXPECT_FALSE(tier.contains(20));
  // the other slot goes to new blocks; the reserved one stays out of reach
  ASSERT_TRUE(storeBlock(tier, 30, 3));
  const std::span<std::byte> slot40 = tier.reserve(40);
  ASSERT_EQ(slot40.size(), kBytes);
  EXPECT_EQ(sunk, (std::vector<BlockHash>{10, 30}));
  // both slots reserved: nothing to take
  EXPECT_TRUE(tier.reserve(50).empty());
  EXPECT_FALSE(storeBlock(tier, 50, 5));
  for (auto [slot, seed] : {std::pair{slot20, 2}, std::pair{slot40, 4}}) {
    const std::vector<std::byte> bytes = pattern(seed);
    std::copy(bytes.begin(), bytes.end(), slot.begin());
  }
  tier.commit(20, 19, slot20);
  tier.commit(40, 39, slot40);
  std::vector<std::byte> out;
  ASSERT_TRUE(loadBlock(tier, 20, out).ok());
  EXPECT_EQ(out, pattern(2));
  ASSERT_TRUE(loadBlock(tier, 40, out).ok());
  EXPECT_EQ(out, pattern(4));
  // a held hash is not reserved again, only refreshed
  EXPECT_TRUE(tier.reserve(20).empty());
  EXPECT_EQ(tier.lruOrder(), (std::vector<BlockHash>{40, 20}));
}

}  // namespace
}  // namespace tandem::kvcache
