#include "router/cluster/kv_subscriber.h"

#include <algorithm>
#include <set>
#include <vector>

#include "router/cluster/kv_subscription.h"

namespace tandem::router::cluster {

KvSubscriber::KvSubscriber(KvSubscriberOptions options, WorkerPool* pool, KvIndex* index,
                           ClusterMetrics* metrics)
    : options_(options), pool_(pool), index_(index), metrics_(metrics) {}

KvSubscriber::~KvSubscriber() { stop(); }

void KvSubscriber::start() {
  std::lock_guard lock(mu_);
  if (reconciling_) return;
  stop_ = false;
  reconciling_ = true;
  timersLocked().runEvery(std::chrono::steady_clock::now(), options_.reconcile_interval,
                          [this] { reconcile(); });
}

TimerQueue& KvSubscriber::timersLocked() {
  if (timers_ == nullptr) timers_ = std::make_unique<TimerQueue>("kv-subscribe");
  return *timers_;
}

void KvSubscriber::stop() {
  std::unique_ptr<TimerQueue> timers;
  std::map<std::string, std::shared_ptr<KvSubscription>> subscriptions;
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    reconciling_ = false;
    timers = std::move(timers_);
    subscriptions.swap(subscriptions_);
  }
  // outside mu_ (a reconcile in progress takes it): no timer runs after
  // this, and the subscriptions' calls end; their timers are dropped.
  if (timers != nullptr) timers->stop();
  for (auto& [address, subscription] : subscriptions) subscription->stop();
}

int KvSubscriber::resyncs() const { return resyncs_.load(); }

int KvSubscriber::refusedSnapshots() const { return refused_.load(); }

void KvSubscriber::reconcile() {
  std::map<std::string, int64_t> wanted;  // address → the most blocks its snapshot may hold
  // a subscription starts once the worker answered a poll: its calls ride
  // the connection the pool opened, which the pool opens a few at a time
  // (WorkerPoolOptions::max_first_contacts).
  std::set<std::string> answered;
  for (const WorkerState& w : pool_->snapshot()) {
    if (!w.has_info) continue;
    if (w.has_stats) answered.insert(w.address);
    // every tier's blocks: the device pool and the tiers below it (G2, G3).
    const int64_t capacity = std::max<int64_t>(w.info.num_blocks(), w.stats.num_blocks()) +
                             std::max<int64_t>(w.info.lower_tier_blocks(), 0);
    int64_t most = options_.max_snapshot_blocks > 0
                       ? options_.max_snapshot_blocks
                       : options_.snapshot_blocks_per_capacity * capacity;
    // never more than the whole index may hold (a worker's report cannot
    // make the router buffer more).
    const int64_t index_max = static_cast<int64_t>(index_->options().max_blocks);
    if (index_max > 0) most = std::min(most, index_max);
    wanted[w.address] = most;
    // the index bounds what a worker announces by what it can hold.
    index_->setWorkerCapacity(w.address, capacity);
  }
  std::vector<std::shared_ptr<KvSubscription>> gone;
  std::vector<std::string> gone_addresses;
  std::vector<std::shared_ptr<KvSubscription>> started;
  {
    std::lock_guard lock(mu_);
    for (auto it = subscriptions_.begin(); it != subscriptions_.end();) {
      if (wanted.contains(it->first)) {
        ++it;
        continue;
      }
      gone_addresses.push_back(it->first);
      gone.push_back(std::move(it->second));
      it = subscriptions_.erase(it);
    }
    if (!stop_) {
      const KvSubscription::Shared shared{&options_,       index_,    metrics_,        &timersLocked(),
                                          &pool_->calls(), &resyncs_, &refused_};
      for (const auto& [address, max_blocks] : wanted) {
        if (subscriptions_.contains(address) || !answered.contains(address)) continue;
        auto subscription =
            std::make_shared<KvSubscription>(shared, address, max_blocks, pool_->stub(address));
        subscriptions_[address] = subscription;
        started.push_back(std::move(subscription));
      }
    }
  }
  for (const auto& subscription : started) subscription->start();
  // outside mu_: each waits for its call to end.
  for (const auto& subscription : gone) subscription->stop();
  for (const std::string& address : gone_addresses) {
    index_->removeWorker(address);
    if (metrics_ != nullptr) metrics_->removeKvIndexWorker(address);
  }
}

}  // namespace tandem::router::cluster
