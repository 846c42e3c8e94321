// DiskTier across restarts and against damaged files: the index is rebuilt
// from the records on disk; torn, foreign-model and corrupt records are
// dropped; a block whose bytes changed is never served.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "kvcache/tiers/disk_record.h"
#include "kvcache/tiers/disk_tier.h"
#include "tests/kvcache/tiers/disk_tier_test_util.h"
#include "tests/test_paths.h"

namespace tandem::kvcache {
namespace {

using testing::blockData;
using testing::kTestBlockBytes;
using testing::loadSync;
using testing::RecordingListener;
using testing::storeSync;
using testing::testOptions;

using Recovered = std::vector<std::pair<BlockHash, BlockHash>>;

class DiskTierRecoveryTest : public ::testing::TestWithParam<DiskIoMode> {
 protected:
  void SetUp() override { dir_ = tandem::testing::makeTempDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<DiskTier> open(DiskTierOptions o) {
    auto tier = DiskTier::open(std::move(o));
    EXPECT_TRUE(tier.ok()) << tier.status();
    if (!tier.ok()) return nullptr;
    EXPECT_FALSE((*tier)->disabled()) << (*tier)->disabledReason();
    return std::move(*tier);
  }
  std::unique_ptr<DiskTier> open() { return open(testOptions(dir_, GetParam(), 8)); }

  // stores blocks 1..n (parent of i is i - 1) into a fresh tier and closes it.
  void writeBlocks(int n) {
    auto tier = open();
    ASSERT_NE(tier, nullptr);
    for (uint64_t h = 1; h <= static_cast<uint64_t>(n); ++h) {
      ASSERT_TRUE(storeSync(*tier, h, h - 1, blockData(h)).ok());
    }
  }
  uint64_t recordBytes() const { return recordBytesFor(kTestBlockBytes); }

  std::string dir_;
};

TEST_P(DiskTierRecoveryTest, ReopenRebuildsTheIndexAndLoadsAreBitExact) {
  writeBlocks(5);
  auto tier = open();
  ASSERT_NE(tier, nullptr);
  EXPECT_EQ(tier->recovered(), (Recovered{{1, 0}, {2, 1}, {3, 2}, {4, 3}, {5, 4}}));
  EXPECT_EQ(tier->numBlocks(), 5);
  EXPECT_EQ(tier->stats().recovered_blocks.load(), 5);
  std::vector<std::byte> back(kTestBlockBytes);
  for (uint64_t h = 1; h <= 5; ++h) {
    ASSERT_TRUE(loadSync(*tier, h, back).ok()) << h;
    EXPECT_EQ(back, blockData(h)) << h;
  }
  // new writes go to free slots, not over the recovered blocks
  ASSERT_TRUE(storeSync(*tier, 6, 5, blockData(6)).ok());
  for (uint64_t h = 1; h <= 6; ++h) EXPECT_TRUE(tier->contains(h)) << h;
}

TEST_P(DiskTierRecoveryTest, RecoveredBlocksKeepTheirWriteOrderForEviction) {
  writeBlocks(8);  // full
  auto tier = open();
  ASSERT_NE(tier, nullptr);
  RecordingListener events;
  tier->setEventListener(&events);
  ASSERT_TRUE(storeSync(*tier, 100, 0, blockData(100)).ok());
  EXPECT_FALSE(tier->contains(1));  // the oldest write goes first
  EXPECT_EQ(events.events().front(), KvEvent(BlockRemoved{1, KvTier::kDisk}));
}

TEST_P(DiskTierRecoveryTest, FlippedPayloadByteFailsTheLoadWithDataLossAndDropsTheBlock) {
  auto tier = open();
  ASSERT_NE(tier, nullptr);
  RecordingListener events;
  tier->setEventListener(&events);
  ASSERT_TRUE(storeSync(*tier, 1, 0, blockData(1)).ok());
  ASSERT_TRUE(storeSync(*tier, 2, 1, blockData(2)).ok());
  // block 2 is in slot 1; flip a byte in the middle of its payload.
  ASSERT_TRUE(testing::flipByte(testing::tierFile(dir_), recordBytes() + 4096 + 5000));
  std::vector<std::byte> back(kTestBlockBytes);
  EXPECT_TRUE(absl::IsDataLoss(loadSync(*tier, 2, back)));
  EXPECT_EQ(tier->stats().checksum_failures.load(), 1);
  EXPECT_FALSE(tier->contains(2));
  EXPECT_TRUE(absl::IsNotFound(loadSync(*tier, 2, back)));
  EXPECT_EQ(events.events().back(), KvEvent(BlockRemoved{2, KvTier::kDisk}));
  ASSERT_TRUE(loadSync(*tier, 1, back).ok());
  EXPECT_EQ(back, blockData(1));
  // the corrupt record's header was zeroed: a restart does not bring it back.
  tier.reset();
  tier = open();
  ASSERT_NE(tier, nullptr);
  EXPECT_EQ(tier->recovered(), (Recovered{{1, 0}}));
}

TEST_P(DiskTierRecoveryTest, CorruptPayloadIsFoundAtOpenWhenAskedToVerify) {
  writeBlocks(3);
  ASSERT_TRUE(testing::flipByte(testing::tierFile(dir_), 2 * recordBytes() + 4096 + 1));
  auto o = testOptions(dir_, GetParam(), 8);
  o.verify_at_open = true;
  auto tier = open(o);
  ASSERT_NE(tier, nullptr);
  EXPECT_EQ(tier->recovered(), (Recovered{{1, 0}, {2, 1}}));
  EXPECT_EQ(tier->stats().dropped_bad_payload.load(), 1);
}

TEST_P(DiskTierRecoveryTest, FlippedHeaderByteDropsTheRecordAtReopen) {
  writeBlocks(3);
  ASSERT_TRUE(testing::flipByte(testing::tierFile(dir_), recordBytes() + 24));  // block 2's hash
  auto tier = open();
  ASSERT_NE(tier, nullptr);
  EXPECT_EQ(tier->recovered(), (Recovered{{1, 0}, {3, 2}}));
  EXPECT_EQ(tier->stats().dropped_bad_header.load(), 1);
  std::vector<std::byte> back(kTestBlockBytes);
  EXPECT_TRUE(absl::IsNotFound(loadSync(*tier, 2, back)));
}

TEST_P(DiskTierRecoveryTest, TruncatedFileDropsTheTornRecordAndKeepsTheRest) {
  writeBlocks(3);
  // cut inside block 3's payload: its header survives, its bytes do not.
  ASSERT_EQ(truncate(testing::tierFile(dir_).c_str(), 2 * recordBytes() + 4096 + 100), 0);
  auto tier = open();
  ASSERT_NE(tier, nullptr);
  EXPECT_EQ(tier->recovered(), (Recovered{{1, 0}, {2, 1}}));
  EXPECT_EQ(tier->stats().dropped_torn.load(), 1);
  std::vector<std::byte> back(kTestBlockBytes);
  for (uint64_t h = 1; h <= 2; ++h) {
    ASSERT_TRUE(loadSync(*tier, h, back).ok());
    EXPECT_EQ(back, blockData(h));
  }
  // the file is whole again and the slot usable
  EXPECT_EQ(std::filesystem::file_size(testing::tierFile(dir_)), 8 * recordBytes());
  ASSERT_TRUE(storeSync(*tier, 3, 2, blockData(3)).ok());
  ASSERT_TRUE(loadSync(*tier, 3, back).ok());
  EXPECT_EQ(back, blockData(3));
}

TEST_P(DiskTierRecoveryTest, RecordsOfAnotherModelAreAllDroppedAtReopen) {
  writeBlocks(4);
  auto o = testOptions(dir_, GetParam(), 8);
  o.fingerprint.weights_id = 0x9999;  // other weights, same shapes
  auto tier = open(o);
  ASSERT_NE(tier, nullptr);
  EXPECT_TRUE(tier->recovered().empty());
  EXPECT_EQ(tier->stats().dropped_foreign.load(), 4);
  EXPECT_EQ(tier->numBlocks(), 0);
  std::vector<std::byte> back(kTestBlockBytes);
  EXPECT_TRUE(absl::IsNotFound(loadSync(*tier, 1, back)));
  ASSERT_TRUE(storeSync(*tier, 1, 0, blockData(11)).ok());
  ASSERT_TRUE(loadSync(*tier, 1, back).ok());
  EXPECT_EQ(back, blockData(11));
}

TEST_P(DiskTierRecoveryTest, AHashStoredTwiceKeepsItsNewestRecord) {
  {
    auto tier = open();
    ASSERT_NE(tier, nullptr);
    ASSERT_TRUE(storeSync(*tier, 1, 0, blockData(100)).ok());
    tier->remove(1);  // lazily: the record stays on disk
    ASSERT_TRUE(storeSync(*tier, 1, 0, blockData(200)).ok());
  }
  auto tier = open();
  ASSERT_NE(tier, nullptr);
  EXPECT_EQ(tier->recovered(), (Recovered{{1, 0}}));
  std::vector<std::byte> back(kTestBlockBytes);
  ASSERT_TRUE(loadSync(*tier, 1, back).ok());
  EXPECT_EQ(back, blockData(200));
  EXPECT_EQ(tier->numBlocks(), 1);
}

TEST_P(DiskTierRecoveryTest, ASmallerCapacityKeepsTheRecordsThatStillFit) {
  writeBlocks(6);
  auto tier = open(testOptions(dir_, GetParam(), 4));
  ASSERT_NE(tier, nullptr);
  EXPECT_EQ(tier->recovered(), (Recovered{{1, 0}, {2, 1}, {3, 2}, {4, 3}}));
  EXPECT_EQ(std::filesystem::file_size(testing::tierFile(dir_)), 4 * recordBytes());
}

INSTANTIATE_TEST_SUITE_P(BothEngines, DiskTierRecoveryTest,
                         ::testing::Values(DiskIoMode::kUring, DiskIoMode::kThreads),
                         [](const auto& info) { return testing::ioName(info.param); });

}  // namespace
}  // namespace tandem::kvcache
