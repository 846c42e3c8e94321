#include "kvcache/slot_store.h"

#include <gtest/gtest.h>

#include <vector>

namespace tandem::kvcache {
namespace {

TEST(SlotStoreTest, StartsWithEverySlotFreeInOrderOrWithNoneFree) {
  SlotStore all(3, KvTier::kHost);
  EXPECT_EQ(all.freeOrder(), (std::vector<int>{0, 1, 2}));
  SlotStore none(3, KvTier::kDisk, SlotStore::Start::kEmpty);
  EXPECT_EQ(none.numFree(), 0);
  EXPECT_FALSE(none.takeFree().has_value());
}

TEST(SlotStoreTest, IndexesAHashOnceAndFindsItsSlot) {
  SlotStore store(4, KvTier::kHost);
  EXPECT_TRUE(store.index(0xa, 2));
  EXPECT_FALSE(store.index(0xa, 3));
  EXPECT_EQ(store.find(0xa), 2);
  store.reindex(0xa, 3);
  EXPECT_EQ(store.find(0xa), 3);
  store.unindex(0xa);
  EXPECT_FALSE(store.holds(0xa));
}

TEST(SlotStoreTest, EvictsTheLeastRecentlyUsedFirstAndSkipsPinnedSlots) {
  SlotStore store(4, KvTier::kHost);
  for (int slot : {0, 1, 2}) store.makeEvictable(slot);
  store.touch(0);  // 1, 2, 0
  store.pin(2);    // 1, 0
  EXPECT_EQ(store.lruOrder(), (std::vector<int>{1, 0}));
  EXPECT_FALSE(store.evictable(2));
  EXPECT_EQ(store.popLeastRecent(), 1);
  EXPECT_EQ(store.popLeastRecent(), 0);
  EXPECT_FALSE(store.popLeastRecent().has_value());
}

TEST(SlotStoreTest, AnnouncesEventsWithItsTier) {
  SlotStore store(1, KvTier::kDisk);
  struct : KvEventListener {
    void onKvEvent(const KvEvent& event) override { events.push_back(event); }
    std::vector<KvEvent> events;
  } listener;
  store.announceStored(0xb, 0xa);  // no listener yet: dropped
  store.setEventListener(&listener);
  store.announceStored(0xb, 0xa);
  store.announceRemoved(0xb);
  store.announceCleared();
  EXPECT_EQ(listener.events, (std::vector<KvEvent>{BlockStored{0xb, 0xa, KvTier::kDisk},
                                                   BlockRemoved{0xb, KvTier::kDisk}, AllCleared{}}));
}

}  // namespace
}  // namespace tandem::kvcache
