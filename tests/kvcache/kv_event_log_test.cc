#include "kvcache/kv_event_log.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace tandem::kvcache {
namespace {

using std::chrono::milliseconds;

BlockStored stored(BlockHash hash, BlockHash parent = kRootParentHash) {
  return BlockStored{hash, parent, KvTier::kDevice};
}

std::vector<BlockStored> sorted(std::vector<BlockStored> blocks) {
  std::sort(blocks.begin(), blocks.end(),
            [](const BlockStored& a, const BlockStored& b) { return a.hash < b.hash; });
  return blocks;
}

TEST(KvEventLogTest, NumbersEventsFromOneInOrder) {
  KvEventLog log;
  EXPECT_EQ(log.lastEventId(), 0u);
  log.onKvEvent(stored(10));
  log.onKvEvent(stored(11, 10));
  log.onKvEvent(BlockRemoved{10});
  log.onKvEvent(AllCleared{});
  EXPECT_EQ(log.lastEventId(), 4u);
  auto all = log.readAfter(0, 100, milliseconds(0));
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 4u);
  for (size_t i = 0; i < all->size(); ++i) EXPECT_EQ((*all)[i].event_id, i + 1);
  EXPECT_EQ(std::get<BlockStored>((*all)[0].event), stored(10));
  EXPECT_EQ(std::get<BlockStored>((*all)[1].event), stored(11, 10));
  EXPECT_EQ(std::get<BlockRemoved>((*all)[2].event), BlockRemoved{10});
  EXPECT_TRUE(std::holds_alternative<AllCleared>((*all)[3].event));
  // from the middle, at most max_events.
  auto some = log.readAfter(1, 2, milliseconds(0));
  ASSERT_TRUE(some.ok());
  ASSERT_EQ(some->size(), 2u);
  EXPECT_EQ((*some)[0].event_id, 2u);
  EXPECT_EQ((*some)[1].event_id, 3u);
  // nothing newer: an empty list after the wait.
  auto none = log.readAfter(4, 10, milliseconds(5));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(KvEventLogTest, ReadAfterWaitsForTheNextEventAndWakesOnIt) {
  KvEventLog log;
  log.onKvEvent(stored(1));
  std::thread writer([&] {
    std::this_thread::sleep_for(milliseconds(50));
    log.onKvEvent(stored(2, 1));
  });
  const auto start = std::chrono::steady_clock::now();
  auto got = log.readAfter(1, 10, std::chrono::seconds(10));
  const auto waited = std::chrono::steady_clock::now() - start;
  writer.join();
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].event_id, 2u);
  EXPECT_GE(waited, milliseconds(40));
  EXPECT_LT(waited, std::chrono::seconds(5));
}

TEST(KvEventLogTest, ReportsOutOfRangeOnceTheCapacityOverflowed) {
  KvEventLog log(3);
  for (BlockHash h = 1; h <= 5; ++h) log.onKvEvent(stored(h));
  // events 3, 4, 5 are kept.
  EXPECT_EQ(log.readAfter(0, 10, milliseconds(0)).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(log.readAfter(1, 10, milliseconds(0)).status().code(),
            absl::StatusCode::kOutOfRange);
  auto kept = log.readAfter(2, 10, milliseconds(0));
  ASSERT_TRUE(kept.ok());
  ASSERT_EQ(kept->size(), 3u);
  EXPECT_EQ(kept->front().event_id, 3u);
  // an id this log never issued (a reader from before a restart) must resync too.
  EXPECT_EQ(log.readAfter(9, 10, milliseconds(0)).status().code(),
            absl::StatusCode::kOutOfRange);
}

TEST(KvEventLogTest, SnapshotHoldsExactlyTheStoredBlocks) {
  KvEventLog log;
  log.onKvEvent(stored(1));
  log.onKvEvent(stored(2, 1));
  log.onKvEvent(stored(3, 2));
  log.onKvEvent(BlockRemoved{2});
  KvSnapshot snap = log.snapshot();
  EXPECT_EQ(snap.last_event_id, 4u);
  EXPECT_EQ(sorted(snap.blocks), (std::vector<BlockStored>{stored(1), stored(3, 2)}));
  // a block of another tier is a separate entry.
  log.onKvEvent(BlockStored{1, kRootParentHash, KvTier::kHost});
  log.onKvEvent(BlockRemoved{1, KvTier::kDevice});
  snap = log.snapshot();
  EXPECT_EQ(sorted(snap.blocks), (std::vector<BlockStored>{
                                     BlockStored{1, kRootParentHash, KvTier::kHost},
                                     stored(3, 2)}));
  log.onKvEvent(AllCleared{});
  snap = log.snapshot();
  EXPECT_EQ(snap.last_event_id, 7u);
  EXPECT_TRUE(snap.blocks.empty());
  log.onKvEvent(stored(4));
  EXPECT_EQ(log.snapshot().blocks, std::vector<BlockStored>{stored(4)});
}

TEST(KvEventLogTest, WakeAllReleasesWaitingReadersAndLaterOnesReturnAtOnce) {
  KvEventLog log;
  std::thread reader([&] {
    auto got = log.readAfter(0, 10, std::chrono::seconds(30));
    ASSERT_TRUE(got.ok());
    EXPECT_TRUE(got->empty());
  });
  std::this_thread::sleep_for(milliseconds(20));
  const auto start = std::chrono::steady_clock::now();
  log.wakeAll();
  reader.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  const auto again = std::chrono::steady_clock::now();
  auto got = log.readAfter(0, 10, std::chrono::seconds(30));
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->empty());
  EXPECT_LT(std::chrono::steady_clock::now() - again, std::chrono::seconds(5));
}

}  // namespace
}  // namespace tandem::kvcache
