#include "router/cluster/kv_index.h"

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

}  // namespace
}  // namespace tandem::router::cluster
