// DiskTier (G3) on real files in a temp directory through both I/O engines:
// io_uring and the pread/pwrite pool run the same cases.
#include "kvcache/tiers/disk_tier.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <thread>

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

class DiskTierTest : public ::testing::TestWithParam<DiskIoMode> {
 protected:
  void SetUp() override { dir_ = tandem::testing::makeTempDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<DiskTier> open(int blocks, int min_hits = 1) {
    auto tier = DiskTier::open(testOptions(dir_, GetParam(), blocks, min_hits));
    EXPECT_TRUE(tier.ok()) << tier.status();
    if (!tier.ok()) return nullptr;
    EXPECT_FALSE((*tier)->disabled()) << (*tier)->disabledReason();
    (*tier)->setEventListener(&events_);
    return std::move(*tier);
  }

  std::string dir_;
  RecordingListener events_;
};

TEST_P(DiskTierTest, StoresAndLoadsBackBitExact) {
  auto tier = open(4);
  ASSERT_NE(tier, nullptr);
  const auto data = blockData(1);
  ASSERT_TRUE(storeSync(*tier, 0xa1, 0xa0, data).ok());
  EXPECT_TRUE(tier->contains(0xa1));
  EXPECT_EQ(tier->numBlocks(), 1);
  std::vector<std::byte> back(kTestBlockBytes);
  ASSERT_TRUE(loadSync(*tier, 0xa1, back).ok());
  EXPECT_EQ(back, data);
  EXPECT_EQ(events_.events(),
            (std::vector<KvEvent>{BlockStored{0xa1, 0xa0, KvTier::kDisk}}));
  const DiskTierStats& s = tier->stats();
  EXPECT_EQ(s.stores.load(), 1);
  EXPECT_EQ(s.loads.load(), 1);
  EXPECT_EQ(s.hits.load(), 1);
  EXPECT_EQ(s.bytes_written.load(), static_cast<int64_t>(tier->recordBytes()));
  EXPECT_EQ(s.bytes_read.load(), static_cast<int64_t>(tier->recordBytes()));
  EXPECT_EQ(s.write_latency.count(), 1);
  EXPECT_EQ(s.read_latency.count(), 1);
  EXPECT_EQ(tier->recordBytes(), 4096u + 12288u);
  EXPECT_EQ(std::filesystem::file_size(testing::tierFile(dir_)), 4 * tier->recordBytes());
  EXPECT_EQ(s.uring.load(), GetParam() == DiskIoMode::kUring);
}

TEST_P(DiskTierTest, ManyBlocksStoredAndLoadedConcurrentlyStayBitExact) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 40;
  auto tier = open(kThreads * kPerThread);
  ASSERT_NE(tier, nullptr);
  std::atomic<int> failures{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const uint64_t id = static_cast<uint64_t>(t) * kPerThread + i + 1;
        absl::Status st;
        // store() says false while every staging buffer is busy: offer again.
        while (absl::IsFailedPrecondition(st = storeSync(*tier, id, id - 1, blockData(id)))) {
          std::this_thread::yield();
        }
        if (!st.ok()) failures++;
      }
    });
  }
  for (auto& w : writers) w.join();
  ASSERT_EQ(failures.load(), 0);
  EXPECT_EQ(tier->numBlocks(), kThreads * kPerThread);

  // all loads in flight at once (more than the queue depth: some wait for a buffer).
  const int n = kThreads * kPerThread;
  std::vector<std::vector<std::byte>> back(n, std::vector<std::byte>(kTestBlockBytes));
  std::vector<std::promise<absl::Status>> done(n);
  std::vector<std::thread> readers;
  for (int t = 0; t < kThreads; ++t) {
    readers.emplace_back([&, t] {
      for (int i = t; i < n; i += kThreads) {
        tier->load(i + 1, back[i], [&, i](absl::Status s) { done[i].set_value(s); });
      }
    });
  }
  for (auto& r : readers) r.join();
  for (int i = 0; i < n; ++i) {
    auto f = done[i].get_future();
    ASSERT_EQ(f.wait_for(testing::kIoDeadline), std::future_status::ready);
    ASSERT_TRUE(f.get().ok()) << "block " << i + 1;
    ASSERT_EQ(back[i], blockData(i + 1)) << "block " << i + 1;
  }
  EXPECT_EQ(tier->stats().loads.load(), n);
  EXPECT_EQ(tier->stats().checksum_failures.load(), 0);
}

TEST_P(DiskTierTest, EvictsLeastRecentlyUsedBlockAndEmitsBlockRemoved) {
  auto tier = open(3);
  ASSERT_NE(tier, nullptr);
  for (uint64_t h = 1; h <= 3; ++h) ASSERT_TRUE(storeSync(*tier, h, 0, blockData(h)).ok());
  std::vector<std::byte> back(kTestBlockBytes);
  ASSERT_TRUE(loadSync(*tier, 1, back).ok());  // 1 becomes the most recently used
  ASSERT_TRUE(storeSync(*tier, 4, 0, blockData(4)).ok());
  EXPECT_FALSE(tier->contains(2));
  EXPECT_TRUE(tier->contains(1));
  EXPECT_TRUE(tier->contains(3));
  EXPECT_TRUE(tier->contains(4));
  EXPECT_TRUE(absl::IsNotFound(loadSync(*tier, 2, back)));
  ASSERT_TRUE(loadSync(*tier, 4, back).ok());
  EXPECT_EQ(back, blockData(4));
  const std::vector<KvEvent> expected = {
      BlockStored{1, 0, KvTier::kDisk}, BlockStored{2, 0, KvTier::kDisk},
      BlockStored{3, 0, KvTier::kDisk}, BlockRemoved{2, KvTier::kDisk},
      BlockStored{4, 0, KvTier::kDisk}};
  EXPECT_EQ(events_.events(), expected);
  EXPECT_EQ(tier->stats().evictions.load(), 1);
  EXPECT_EQ(tier->numBlocks(), 3);
  EXPECT_EQ(tier->stats().misses.load(), 1);
}

TEST_P(DiskTierTest, AdmitsOnlyBlocksOfferedMinHitsTimes) {
  auto tier = open(4, /*min_hits=*/2);
  ASSERT_NE(tier, nullptr);
  EXPECT_TRUE(absl::IsFailedPrecondition(storeSync(*tier, 7, 0, blockData(7))));
  EXPECT_FALSE(tier->contains(7));
  EXPECT_EQ(tier->stats().admission_rejections.load(), 1);
  EXPECT_TRUE(storeSync(*tier, 7, 0, blockData(7)).ok());
  EXPECT_TRUE(tier->contains(7));
  EXPECT_EQ(tier->stats().admission_rejections.load(), 1);
  EXPECT_TRUE(events_.events().size() == 1);
}

TEST_P(DiskTierTest, MinHitsOfOneAdmitsEveryBlock) {
  auto tier = open(4, /*min_hits=*/1);
  ASSERT_NE(tier, nullptr);
  EXPECT_TRUE(storeSync(*tier, 7, 0, blockData(7)).ok());
  EXPECT_EQ(tier->stats().admission_rejections.load(), 0);
}

TEST_P(DiskTierTest, StoreOfAHeldBlockIsTakenAtOnceWithoutAnEvent) {
  auto tier = open(4);
  ASSERT_NE(tier, nullptr);
  ASSERT_TRUE(storeSync(*tier, 5, 0, blockData(5)).ok());
  ASSERT_TRUE(storeSync(*tier, 5, 0, blockData(5)).ok());
  EXPECT_EQ(tier->stats().stores.load(), 1);
  EXPECT_EQ(events_.events().size(), 1u);
}

TEST_P(DiskTierTest, RemoveDropsTheBlockAndEmitsBlockRemoved) {
  auto tier = open(4);
  ASSERT_NE(tier, nullptr);
  ASSERT_TRUE(storeSync(*tier, 9, 8, blockData(9)).ok());
  tier->remove(9);
  tier->remove(9);  // twice: nothing more happens
  EXPECT_FALSE(tier->contains(9));
  EXPECT_EQ(tier->numBlocks(), 0);
  std::vector<std::byte> back(kTestBlockBytes);
  EXPECT_TRUE(absl::IsNotFound(loadSync(*tier, 9, back)));
  EXPECT_EQ(events_.events(), (std::vector<KvEvent>{BlockStored{9, 8, KvTier::kDisk},
                                                    BlockRemoved{9, KvTier::kDisk}}));
}

TEST_P(DiskTierTest, RefusesBlocksOfTheWrongSize) {
  auto tier = open(4);
  ASSERT_NE(tier, nullptr);
  EXPECT_TRUE(absl::IsFailedPrecondition(storeSync(*tier, 1, 0, blockData(1, 100))));
  std::vector<std::byte> small(100);
  EXPECT_TRUE(absl::IsInvalidArgument(loadSync(*tier, 1, small)));
}

TEST_P(DiskTierTest, RejectsOptionsThatHoldNothing) {
  auto o = testOptions(dir_, GetParam(), 1);
  o.capacity_bytes = 4096;
  EXPECT_TRUE(absl::IsInvalidArgument(DiskTier::open(o).status()));
  o = testOptions(dir_, GetParam(), 1);
  o.block_bytes = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(DiskTier::open(o).status()));
  o = testOptions(dir_, GetParam(), 1);
  o.queue_depth = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(DiskTier::open(o).status()));
}

TEST_P(DiskTierTest, SecondTierOnTheSameDirectoryIsRefusedByTheFileLock) {
  auto first = open(4);
  ASSERT_NE(first, nullptr);
  auto second = DiskTier::open(testOptions(dir_, GetParam(), 4));
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE((*second)->disabled());
  EXPECT_NE((*second)->disabledReason().find("locked by another process"), std::string::npos)
      << (*second)->disabledReason();
}

TEST_P(DiskTierTest, OpenWaitsUpToLockWaitForTheHolderToLetGo) {
  // a crashed worker's ring holds the file's lock a little after exit: the
  // next open waits for it (here the holder closes while the open waits).
  auto first = open(4);
  ASSERT_NE(first, nullptr);
  std::atomic<bool> waiting{false};
  std::thread closer([&] {
    while (!waiting.load()) std::this_thread::yield();
    first.reset();
  });
  DiskTierOptions o = testOptions(dir_, GetParam(), 4);
  o.lock_wait = absl::Seconds(60);
  waiting = true;
  auto second = DiskTier::open(o);
  closer.join();
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE((*second)->disabled()) << (*second)->disabledReason();
}

TEST_P(DiskTierTest, FallsBehindWithFalseWhenEveryBufferIsBusy) {
  auto tier = open(64);
  ASSERT_NE(tier, nullptr);
  // more stores at once than staging buffers (8): some are refused, none lost.
  std::atomic<int> completed{0};
  int taken = 0;
  for (uint64_t h = 1; h <= 64; ++h) {
    if (tier->store(h, 0, blockData(h), [&](absl::Status s) {
          EXPECT_TRUE(s.ok());
          completed++;
        })) {
      ++taken;
    }
  }
  tier.reset();  // waits for the writes in flight
  EXPECT_EQ(completed.load(), taken);
  EXPECT_GE(taken, 1);
}

INSTANTIATE_TEST_SUITE_P(BothEngines, DiskTierTest,
                         ::testing::Values(DiskIoMode::kUring, DiskIoMode::kThreads),
                         [](const auto& info) { return testing::ioName(info.param); });

}  // namespace
}  // namespace tandem::kvcache
