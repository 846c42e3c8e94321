// KvSubscriber against workers on real gRPC servers on loopback: streamed
// snapshots assembled whole, snapshots too large refused, and the backoff
// between resyncs of a worker that keeps forcing them.
#include "router/cluster/kv_subscriber.h"

#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "tests/router/cluster/fake_worker.h"

namespace tandem::router::cluster {
namespace {

using namespace std::chrono_literals;
using testing::FakeWorker;
using testing::FakeWorkerConfig;
using testing::waitFor;

double counter(prometheus::Registry& registry, const std::string& name) {
  for (const auto& family : registry.Collect()) {
    if (family.name == name) return family.metric[0].counter.value;
  }
  return -1;
}

class KvSubscriberTest : public ::testing::Test {
 protected:
  void start(FakeWorker& worker, KvSubscriberOptions options) {
    pool_ = std::make_unique<WorkerPool>(WorkerPoolOptions{}, nullptr);
    ASSERT_TRUE(pool_->registerWorker(worker.info()).ok());
    pool_->pollOnce();  // the subscriber takes workers that answered a poll
    subscriber_ = std::make_unique<KvSubscriber>(options, pool_.get(), &index_, &metrics_);
    subscriber_->reconcile();
  }
  void TearDown() override {
    if (subscriber_ != nullptr) subscriber_->stop();
  }

  prometheus::Registry registry_;
  ClusterMetrics metrics_{registry_};
  std::unique_ptr<WorkerPool> pool_;
  KvIndex index_;
  std::unique_ptr<KvSubscriber> subscriber_;
};

// 200000 blocks do not fit one gRPC message (4 MiB): the worker streams them
// in parts and the index gets them all, from one snapshot.
TEST_F(KvSubscriberTest, AssemblesASnapshotStreamedInParts) {
  constexpr int kBlocks = 200000;
  FakeWorkerConfig config;
  config.num_blocks = 250000;  // what it reports it can store
  FakeWorker worker(config);
  worker.start();
  for (int i = 1; i <= kBlocks; ++i) worker.storeBlock(1000000 + i, i == 1 ? 0 : 1000000 + i - 1);
  start(worker, KvSubscriberOptions{});
  ASSERT_TRUE(waitFor([&] { return index_.numBlocks(worker.address()) == kBlocks; }));
  const std::vector<kvcache::BlockHash> first = {1000001, 1000002, 1000003};
  EXPECT_EQ(index_.leadingBlocks(worker.address(), first), 3);
  EXPECT_EQ(worker.snapshotCalls(), 1);
  // counted right after the index took it.
  EXPECT_TRUE(waitFor([&] { return counter(registry_, "tandem:router_kv_snapshots_total") == 1; }));
  EXPECT_EQ(subscriber_->refusedSnapshots(), 0);
  // and it follows the events after the snapshot.
  worker.storeBlock(7, 0);
  EXPECT_TRUE(waitFor([&] { return index_.numBlocks(worker.address()) == kBlocks + 1; }));
}

// a worker reporting 100 blocks may send a snapshot of at most 400: one of
// 500 is refused (the index stays empty) and retried; once the worker holds
// fewer, its snapshot is taken.
TEST_F(KvSubscriberTest, RefusesASnapshotLargerThanTheWorkerCanStore) {
  FakeWorkerConfig config;
  config.num_blocks = 100;
  FakeWorker worker(config);
  worker.start();
  for (int i = 1; i <= 500; ++i) worker.storeBlock(i, 0);
  KvSubscriberOptions options;
  options.retry_delay = 20ms;
  options.max_retry_delay = 100ms;
  start(worker, options);
  ASSERT_TRUE(waitFor([&] { return subscriber_->refusedSnapshots() >= 2; }));
  EXPECT_EQ(index_.numBlocks(worker.address()), 0u);
  EXPECT_GE(counter(registry_, "tandem:router_kv_snapshots_refused_total"), 2);
  EXPECT_EQ(counter(registry_, "tandem:router_kv_snapshots_total"), 0);
  for (int i = 1; i <= 200; ++i) worker.removeBlock(i);
  ASSERT_TRUE(waitFor([&] { return index_.numBlocks(worker.address()) == 300; }));
}

// blocks on the tiers below the device pool count: a worker with a small
// pool and a large host/disk tier is indexed whole.
TEST_F(KvSubscriberTest, TakesTheSnapshotOfAWorkerWhoseLowerTiersHoldMost) {
  FakeWorkerConfig config;
  config.num_blocks = 100;
  config.lower_tier_blocks = 1000;
  FakeWorker worker(config);
  worker.start();
  for (int i = 1; i <= 500; ++i) worker.storeBlock(i, 0);
  start(worker, KvSubscriberOptions{});
  ASSERT_TRUE(waitFor([&] { return index_.numBlocks(worker.address()) == 500; }));
  EXPECT_EQ(subscriber_->refusedSnapshots(), 0);
}

// a cap set by flag wins over the worker's capacity.
TEST_F(KvSubscriberTest, RefusesASnapshotAboveTheConfiguredCap) {
  FakeWorker worker(FakeWorkerConfig{});  // 1000 blocks: 4000 would pass
  worker.start();
  for (int i = 1; i <= 50; ++i) worker.storeBlock(i, 0);
  KvSubscriberOptions options;
  options.max_snapshot_blocks = 49;
  options.retry_delay = 20ms;
  start(worker, options);
  ASSERT_TRUE(waitFor([&] { return subscriber_->refusedSnapshots() >= 1; }));
  EXPECT_EQ(index_.numBlocks(worker.address()), 0u);
}

// a worker whose event stream always needs a resync (OUT_OF_RANGE at once)
// is snapshotted after ever longer waits: the k-th resync waits at least
// half of retry_delay * 2^(k-1), not back to back.
TEST_F(KvSubscriberTest, BacksOffBetweenResyncsOfAWorkerThatKeepsForcingThem) {
  FakeWorker worker(FakeWorkerConfig{});
  worker.start();
  worker.storeBlock(11, 0);
  worker.out_of_range_always = true;
  KvSubscriberOptions options;
  options.retry_delay = 40ms;
  options.max_retry_delay = 10s;
  start(worker, options);
  ASSERT_TRUE(waitFor([&] { return worker.snapshotCalls() >= 6; }));
  subscriber_->stop();
  const auto times = worker.snapshotTimes();
  ASSERT_GE(times.size(), 6u);
  for (size_t k = 1; k < 6; ++k) {
    const auto bound = options.retry_delay * (1 << (k - 1));
    // the delay is drawn from [bound/2, bound]; the worker stamps each call
    // when its handler runs, which a loaded machine may delay for the
    // earlier call only: a quarter of the bound leaves room for that, and a
    // router without backoff (gaps of a round trip) still fails.
    EXPECT_GE(times[k] - times[k - 1], bound / 4) << "resync " << k;
  }
  // the last snapshot may still be on its way to the index when stopped.
  EXPECT_GE(subscriber_->resyncs(), 4);
  // each resync still rebuilt the index.
  EXPECT_EQ(index_.numBlocks(worker.address()), 1u);
}

}  // namespace
}  // namespace tandem::router::cluster
