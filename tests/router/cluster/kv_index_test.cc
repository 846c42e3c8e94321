#include "router/cluster/kv_index.h"

#include <algorithm>

#include "gtest/gtest.h"
#include "router/cluster/kv_subscriber.h"
#include "tests/router/cluster/fake_worker.h"

namespace tandem::router::cluster {
namespace {

using namespace std::chrono_literals;
using testing::FakeWorker;
using testing::FakeWorkerConfig;
using testing::waitFor;

tandem::v1::KvEvent stored(uint64_t id, uint64_t hash, int tier = 0) {
  tandem::v1::KvEvent e;
  e.set_event_id(id);
  e.mutable_stored()->set_hash(hash);
  e.mutable_stored()->set_tier(tier);
  return e;
}

tandem::v1::KvEvent removed(uint64_t id, uint64_t hash, int tier = 0) {
  tandem::v1::KvEvent e;
  e.set_event_id(id);
  e.mutable_removed()->set_hash(hash);
  e.mutable_removed()->set_tier(tier);
  return e;
}

TEST(KvIndexTest, CountsOnlyTheLeadingBlocksAWorkerHolds) {
  KvIndex index;
  index.applyEvent("d", stored(1, 11));
  index.applyEvent("d", stored(2, 12));
  index.applyEvent("d", stored(3, 14));
  const std::vector<kvcache::BlockHash> prompt = {11, 12, 13, 14};
  EXPECT_EQ(index.leadingBlocks("d", prompt), 2);
  EXPECT_EQ(index.leadingBlocks("other", prompt), 0);
  index.applyEvent("d", removed(4, 11));
  EXPECT_EQ(index.leadingBlocks("d", prompt), 0);
}

TEST(KvIndexTest, BlockStaysWhileAnyTierHoldsIt) {
  KvIndex index;
  index.applyEvent("d", stored(1, 11, 0));
  index.applyEvent("d", stored(2, 11, 1));
  index.applyEvent("d", removed(3, 11, 0));
  EXPECT_EQ(index.numBlocks("d"), 1u);
  index.applyEvent("d", removed(4, 11, 1));
  EXPECT_EQ(index.numBlocks("d"), 0u);
}

TEST(KvIndexTest, AllClearedAndSnapshotReplaceEverything) {
  KvIndex index;
  index.applyEvent("d", stored(1, 11));
  tandem::v1::KvEvent cleared;
  cleared.set_event_id(2);
  cleared.mutable_cleared();
  index.applyEvent("d", cleared);
  EXPECT_EQ(index.numBlocks("d"), 0u);
  tandem::v1::KvSnapshotResponse snapshot;
  snapshot.add_blocks()->set_hash(21);
  snapshot.add_blocks()->set_hash(22);
  index.applyEvent("d", stored(3, 99));
  index.applySnapshot("d", snapshot);
  EXPECT_EQ(index.numBlocks("d"), 2u);
  EXPECT_EQ(index.leadingBlocks("d", std::vector<kvcache::BlockHash>{99}), 0);
}

tandem::v1::KvEvent clearedEvent(uint64_t id) {
  tandem::v1::KvEvent e;
  e.set_event_id(id);
  e.mutable_cleared();
  return e;
}

TEST(KvIndexTest, DuplicateEventsChangeNothing) {
  KvIndex index;
  EXPECT_TRUE(index.applyEvent("d", stored(1, 11)));
  EXPECT_TRUE(index.applyEvent("d", removed(2, 11)));
  // event 1 again (a retransmitted batch): the block stays removed.
  EXPECT_TRUE(index.applyEvent("d", stored(1, 11)));
  EXPECT_EQ(index.numBlocks("d"), 0u);
}

TEST(KvIndexTest, ALostEventIsRefusedUntilASnapshotResyncs) {
  KvIndex index;
  EXPECT_TRUE(index.applyEvent("d", stored(1, 11)));
  // event 2 was lost: 3 does not apply, the caller resyncs.
  EXPECT_FALSE(index.applyEvent("d", stored(3, 13)));
  EXPECT_EQ(index.numBlocks("d"), 1u);
  tandem::v1::KvSnapshotResponse snapshot;
  snapshot.set_last_event_id(3);
  for (uint64_t h : {11, 12, 13}) snapshot.add_blocks()->set_hash(h);
  index.applySnapshot("d", snapshot);
  EXPECT_EQ(index.leadingBlocks("d", std::vector<kvcache::BlockHash>{11, 12, 13}), 3);
  // events after the snapshot apply; those it covers are duplicates.
  EXPECT_TRUE(index.applyEvent("d", removed(2, 12)));
  EXPECT_TRUE(index.applyEvent("d", removed(4, 13)));
  EXPECT_EQ(index.leadingBlocks("d", std::vector<kvcache::BlockHash>{11, 12, 13}), 2);
}

TEST(KvIndexTest, ReorderedEventsAreRefusedNotMisapplied) {
  KvIndex index;
  EXPECT_TRUE(index.applyEvent("d", stored(1, 11)));
  // 3 (remove) overtook 2 (store): applying 3 then 2 would leave 12 held.
  EXPECT_FALSE(index.applyEvent("d", removed(3, 12)));
  EXPECT_TRUE(index.applyEvent("d", stored(2, 12)));
  EXPECT_TRUE(index.applyEvent("d", removed(3, 12)));
  EXPECT_EQ(index.leadingBlocks("d", std::vector<kvcache::BlockHash>{11, 12}), 1);
}

TEST(KvIndexTest, AWorkerRestartIsASnapshotOfTheNewIncarnation) {
  KvIndex index;
  for (uint64_t id = 1; id <= 5; ++id) index.applyEvent("d", stored(id, 10 + id));
  // AllCleared empties the worker, ids go on.
  EXPECT_TRUE(index.applyEvent("d", clearedEvent(6)));
  EXPECT_EQ(index.numBlocks("d"), 0u);
  EXPECT_TRUE(index.applyEvent("d", stored(7, 11)));
  // a new incarnation numbers from 1 again: its snapshot (last id 0) resets the ids.
  tandem::v1::KvSnapshotResponse snapshot;
  snapshot.set_worker_id("w2");
  index.applySnapshot("d", snapshot);
  EXPECT_EQ(index.numBlocks("d"), 0u);
  EXPECT_TRUE(index.applyEvent("d", stored(1, 21)));
  EXPECT_EQ(index.leadingBlocks("d", std::vector<kvcache::BlockHash>{21}), 1);
  EXPECT_EQ(index.totalBlocks(), 1u);
}

TEST(KvIndexTest, MatchesPerTierAlongTheChainForEveryWorker) {
  KvIndex index;
  // d1: 11 device, 12 host, 13 disk, 14 device; d2: 11 host, 12 device; d3: 12 only.
  index.applyEvent("d1", stored(0, 11, 0));
  index.applyEvent("d1", stored(0, 12, 1));
  index.applyEvent("d1", stored(0, 13, 2));
  index.applyEvent("d1", stored(0, 14, 0));
  index.applyEvent("d2", stored(0, 11, 1));
  index.applyEvent("d2", stored(0, 12, 0));
  index.applyEvent("d3", stored(0, 12, 0));
  const std::vector<kvcache::BlockHash> chain = {11, 12, 13, 14, 15};
  EXPECT_EQ(index.match("d1", chain), (TierMatch{.device = 1, .host = 2, .any = 4}));
  EXPECT_EQ(index.match("d2", chain), (TierMatch{.device = 0, .host = 2, .any = 2}));
  EXPECT_EQ(index.match("d3", chain), TierMatch{});
  auto all = index.matchAll(chain);
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  ASSERT_EQ(all.size(), 2u);  // d3 lacks the first block
  EXPECT_EQ(all[0].first, "d1");
  EXPECT_EQ(all[0].second, (TierMatch{.device = 1, .host = 2, .any = 4}));
  EXPECT_EQ(all[1].first, "d2");
  EXPECT_EQ(all[1].second, (TierMatch{.device = 0, .host = 2, .any = 2}));
}

TEST(KvIndexTest, AFloodingWorkerCannotGrowTheIndexPastItsCapacity) {
  KvIndex index(KvIndexOptions{.max_blocks = 0, .capacity_slack = 2.0, .capacity_floor_blocks = 16});
  index.setWorkerCapacity("d", 10);  // bound: 2 x 10 + 16
  index.applyEvent("d2", stored(1, 1));
  for (uint64_t id = 1; id <= 10000; ++id) index.applyEvent("d", stored(id, 1000 + id));
  EXPECT_EQ(index.numBlocks("d"), 36u);
  EXPECT_EQ(index.numBlocks("d2"), 1u);  // the others keep theirs
  EXPECT_EQ(index.evictions(), 10000u - 36u);
  // the oldest went: the newest chain tail is there.
  EXPECT_EQ(index.leadingBlocks("d", std::vector<kvcache::BlockHash>{10000 + 1000}), 1);
  EXPECT_EQ(index.leadingBlocks("d", std::vector<kvcache::BlockHash>{1001}), 0);
  // a snapshot cannot flood it either, and a lower capacity evicts at once.
  tandem::v1::KvSnapshotResponse snapshot;
  for (uint64_t h = 0; h < 500; ++h) snapshot.add_blocks()->set_hash(5000 + h);
  index.applySnapshot("d", snapshot);
  EXPECT_EQ(index.numBlocks("d"), 36u);
  index.setWorkerCapacity("d", 2);
  EXPECT_EQ(index.numBlocks("d"), 20u);
}

TEST(KvIndexTest, TheGlobalBoundEvictsTheOldestBlocksOfTheBiggestWorker) {
  KvIndex index(KvIndexOptions{.max_blocks = 100});
  for (uint64_t i = 1; i <= 30; ++i) index.applyEvent("small", stored(i, 50'000 + i));
  for (uint64_t i = 1; i <= 200; ++i) index.applyEvent("big", stored(i, i));
  EXPECT_EQ(index.totalBlocks(), 100u);
  EXPECT_EQ(index.numBlocks("small"), 30u);
  EXPECT_EQ(index.numBlocks("big"), 70u);
  EXPECT_EQ(index.leadingBlocks("big", std::vector<kvcache::BlockHash>{200}), 1);
  EXPECT_EQ(index.leadingBlocks("big", std::vector<kvcache::BlockHash>{130}), 0);
  // a block stored again is the newest: it survives the next evictions.
  index.applyEvent("big", stored(201, 131));
  for (uint64_t i = 202; i <= 260; ++i) index.applyEvent("big", stored(i, i));
  EXPECT_EQ(index.leadingBlocks("big", std::vector<kvcache::BlockHash>{131}), 1);
  EXPECT_GT(index.memoryBytes(), 100u * sizeof(kvcache::BlockHash));
}

TEST(KvIndexTest, RemovingAWorkerFreesItsBlocksAndSlot) {
  KvIndex index;
  for (uint64_t i = 1; i <= 10; ++i) index.applyEvent("a", stored(i, i));
  index.applyEvent("b", stored(1, 1));
  index.removeWorker("a");
  EXPECT_EQ(index.totalBlocks(), 1u);
  EXPECT_EQ(index.numBlocks("a"), 0u);
  index.applyEvent("c", stored(1, 1));  // reuses a's slot
  EXPECT_EQ(index.match("c", std::vector<kvcache::BlockHash>{1, 2}).any, 1);
  EXPECT_EQ(index.match("b", std::vector<kvcache::BlockHash>{1}).any, 1);
  // the worker looked up last leaves and comes back: a fresh slot.
  index.removeWorker("c");
  EXPECT_EQ(index.numBlocks("c"), 0u);
  index.applyEvent("c", stored(1, 7));
  EXPECT_EQ(index.numBlocks("c"), 1u);
  EXPECT_EQ(index.match("c", std::vector<kvcache::BlockHash>{1}).any, 0);
}

// the subscriber against a real (fake) worker found in a pool.
class KvSubscriberTest : public ::testing::Test {
 protected:
  void SetUp() override {
    worker_.start();
    worker_.storeBlock(11, 0);
    worker_.storeBlock(12, 11);
    WorkerPoolOptions options;
    options.poll_interval = 30ms;
    pool_ = std::make_unique<WorkerPool>(options, nullptr);
    ASSERT_TRUE(pool_->registerWorker(worker_.info()).ok());
    pool_->pollOnce();  // the subscriber takes workers that answered a poll
    KvSubscriberOptions sub;
    sub.reconcile_interval = 20ms;
    sub.retry_delay = 20ms;
    subscriber_ = std::make_unique<KvSubscriber>(sub, pool_.get(), &index_, &metrics_);
    subscriber_->start();
  }
  void TearDown() override {
    subscriber_->stop();
    worker_.shutdown();
  }
  int held(std::vector<kvcache::BlockHash> hashes) {
    return index_.leadingBlocks(worker_.address(), hashes);
  }
  // tandem:router_kv_index_blocks{worker=the worker}; -1 when absent.
  double indexBlocksGauge() {
    for (const auto& family : registry_.Collect()) {
      if (family.name != "tandem:router_kv_index_blocks") continue;
      for (const auto& m : family.metric) {
        if (m.label.size() == 1 && m.label[0].value == worker_.address()) return m.gauge.value;
      }
    }
    return -1;
  }
  double snapshotsCounter() {
    for (const auto& family : registry_.Collect()) {
      if (family.name == "tandem:router_kv_snapshots_total") return family.metric[0].counter.value;
    }
    return -1;
  }

  FakeWorker worker_{FakeWorkerConfig{}};
  prometheus::Registry registry_;
  ClusterMetrics metrics_{registry_};
  std::unique_ptr<WorkerPool> pool_;
  KvIndex index_;
  std::unique_ptr<KvSubscriber> subscriber_;
};

TEST_F(KvSubscriberTest, BuildsTheIndexFromTheSnapshotThenEvents) {
  ASSERT_TRUE(waitFor([&] { return held({11, 12}) == 2; }));
  worker_.storeBlock(13, 12);
  ASSERT_TRUE(waitFor([&] { return held({11, 12, 13}) == 3; }));
  worker_.removeBlock(12);
  ASSERT_TRUE(waitFor([&] { return held({11, 12, 13}) == 1; }));
  EXPECT_EQ(worker_.snapshotCalls(), 1);
  EXPECT_EQ(subscriber_->resyncs(), 0);
  EXPECT_EQ(snapshotsCounter(), 1);
  // blocks 11 and 13 are held (12 was removed).
  EXPECT_TRUE(waitFor([&] { return indexBlocksGauge() == 2; }));
}

TEST_F(KvSubscriberTest, ResyncsFromASnapshotAfterAGapInEventIds) {
  ASSERT_TRUE(waitFor([&] { return held({11, 12}) == 2; }));
  worker_.storeBlock(13, 12, /*skip=*/2);  // events 3 and 4 never come
  ASSERT_TRUE(waitFor([&] { return subscriber_->resyncs() == 1 && held({11, 12, 13}) == 3; }));
  EXPECT_EQ(worker_.snapshotCalls(), 2);
  EXPECT_EQ(snapshotsCounter(), 2);
  EXPECT_TRUE(waitFor([&] { return indexBlocksGauge() == 3; }));
}

TEST_F(KvSubscriberTest, ResyncsWhenAWorkerRestartsWithANewId) {
  ASSERT_TRUE(waitFor([&] { return held({11, 12}) == 2; }));
  worker_.restartAs("w1-restarted");
  worker_.storeBlock(31, 0);
  ASSERT_TRUE(waitFor([&] { return held({31}) == 1 && held({11}) == 0; }));
  EXPECT_GE(subscriber_->resyncs(), 1);
}

// the process dies (its connections drop) and a new one serves the same
// address a moment later, as a supervisor or a pod with a fixed address
// restarts it.
TEST_F(KvSubscriberTest, ResyncsWithAWorkerRestartedAtTheSameAddressAfterItDied) {
  ASSERT_TRUE(waitFor([&] { return held({11, 12}) == 2; }));
  worker_.shutdown();
  worker_.restartAs("w1-restarted");
  worker_.start();
  worker_.storeBlock(31, 0);
  ASSERT_TRUE(waitFor([&] { return held({31}) == 1 && held({11}) == 0; }));
}

TEST_F(KvSubscriberTest, ForgetsAWorkerThatLeavesThePool) {
  ASSERT_TRUE(waitFor([&] { return held({11, 12}) == 2; }));
  EXPECT_TRUE(waitFor([&] { return indexBlocksGauge() == 2; }));
  pool_->deregisterWorker("w1");
  ASSERT_TRUE(waitFor([&] { return index_.numBlocks(worker_.address()) == 0; }));
  // its series goes with it.
  EXPECT_TRUE(waitFor([&] { return indexBlocksGauge() == -1; }));
}

TEST(KvSubscriberOutOfRangeTest, ResyncsWhenTheWorkerNoLongerKeepsTheEvents) {
  FakeWorker worker(FakeWorkerConfig{});
  worker.start();
  worker.storeBlock(11, 0);
  worker.out_of_range_once = true;
  WorkerPool pool(WorkerPoolOptions{}, nullptr);
  ASSERT_TRUE(pool.registerWorker(worker.info()).ok());
  pool.pollOnce();  // the subscriber takes workers that answered a poll
  KvIndex index;
  prometheus::Registry registry;
  ClusterMetrics metrics(registry);
  KvSubscriberOptions options;
  options.retry_delay = 20ms;
  KvSubscriber subscriber(options, &pool, &index, &metrics);
  subscriber.reconcile();
  ASSERT_TRUE(waitFor([&] { return subscriber.resyncs() == 1; }));
  EXPECT_EQ(worker.snapshotCalls(), 2);
  // and it follows events after the second snapshot.
  worker.storeBlock(12, 11);
  ASSERT_TRUE(waitFor([&] {
    return index.leadingBlocks(worker.address(), std::vector<kvcache::BlockHash>{11, 12}) == 2;
  }));
  subscriber.stop();
  double resyncs = -1;
  double snapshots = -1;
  for (const auto& family : registry.Collect()) {
    if (family.name == "tandem:router_kv_resyncs_total") resyncs = family.metric[0].counter.value;
    if (family.name == "tandem:router_kv_snapshots_total") snapshots = family.metric[0].counter.value;
  }
  EXPECT_EQ(resyncs, 1);
  EXPECT_EQ(snapshots, 2);
}

// two router replicas (and a router that restarts: a new subscriber and
// index) over the same worker each build the whole index.
TEST(KvSubscriberReplicasTest, TwoRoutersAndARestartedOneEachKeepACorrectIndex) {
  FakeWorker worker{FakeWorkerConfig{}};
  worker.start();
  worker.storeBlock(11, 0);
  KvSubscriberOptions options;
  options.retry_delay = 20ms;
  WorkerPool pool_a(WorkerPoolOptions{}, nullptr), pool_b(WorkerPoolOptions{}, nullptr);
  ASSERT_TRUE(pool_a.registerWorker(worker.info()).ok());
  pool_a.pollOnce();  // the subscriber takes workers that answered a poll
  ASSERT_TRUE(pool_b.registerWorker(worker.info()).ok());
  pool_b.pollOnce();  // the subscriber takes workers that answered a poll
  KvIndex index_a, index_b;
  auto sub_a = std::make_unique<KvSubscriber>(options, &pool_a, &index_a, nullptr);
  KvSubscriber sub_b(options, &pool_b, &index_b, nullptr);
  sub_a->reconcile();
  sub_b.reconcile();
  worker.storeBlock(12, 11);
  const std::vector<kvcache::BlockHash> chain = {11, 12, 13};
  auto held = [&](const KvIndex& index) { return index.leadingBlocks(worker.address(), chain); };
  ASSERT_TRUE(waitFor([&] { return held(index_a) == 2 && held(index_b) == 2; }));
  // router A restarts: a fresh index from a snapshot, B goes on with events.
  sub_a.reset();
  KvIndex index_a2;
  sub_a = std::make_unique<KvSubscriber>(options, &pool_a, &index_a2, nullptr);
  sub_a->reconcile();
  worker.storeBlock(13, 12);
  ASSERT_TRUE(waitFor([&] { return held(index_a2) == 3 && held(index_b) == 3; }));
  worker.removeBlock(11);
  ASSERT_TRUE(waitFor([&] { return held(index_a2) == 0 && held(index_b) == 0; }));
  EXPECT_EQ(index_a2.numBlocks(worker.address()), 2u);
  EXPECT_EQ(index_b.numBlocks(worker.address()), 2u);
  sub_a->stop();
  sub_b.stop();
  worker.shutdown();
}

// the subscriber bounds a worker by the capacity it reports (WorkerInfo).
TEST(KvSubscriberCapTest, AWorkerFloodingStoredEventsStaysWithinItsCapacity) {
  FakeWorkerConfig config;
  config.num_blocks = 10;
  FakeWorker worker{config};
  worker.start();
  WorkerPool pool(WorkerPoolOptions{}, nullptr);
  ASSERT_TRUE(pool.registerWorker(worker.info()).ok());
  pool.pollOnce();  // the subscriber takes workers that answered a poll
  KvIndex index(KvIndexOptions{.max_blocks = 0, .capacity_slack = 2.0, .capacity_floor_blocks = 16});
  KvSubscriberOptions options;
  options.retry_delay = 20ms;
  KvSubscriber subscriber(options, &pool, &index, nullptr);
  subscriber.reconcile();
  ASSERT_EQ(index.workerLimit(worker.address()), 36u);
  // the flood comes as events after the first (empty) snapshot: a snapshot
  // of 2000 blocks would be refused whole (KvSubscriberTest covers that).
  ASSERT_TRUE(waitFor([&] { return !worker.snapshotTimes().empty(); }));
  for (uint64_t h = 1; h <= 2000; ++h) worker.storeBlock(h, h - 1);
  ASSERT_TRUE(waitFor([&] {
    return index.leadingBlocks(worker.address(), std::vector<kvcache::BlockHash>{2000}) == 1;
  }));
  EXPECT_EQ(index.numBlocks(worker.address()), 36u);
  subscriber.stop();
  worker.shutdown();
}

}  // namespace
}  // namespace tandem::router::cluster
