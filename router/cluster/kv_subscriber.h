// Keeps the KvIndex in step with every worker of the pool: one
// KvSubscription per worker (router/cluster/kv_subscription.h: a snapshot,
// then its event stream, as asynchronous calls; resyncs after a backoff),
// all on the pool's completion thread and this subscriber's one
// TimerQueue, so the router's threads do not grow with its workers. Every
// snapshot applied is counted in tandem:router_kv_snapshots_total, resyncs
// in tandem:router_kv_resyncs_total, refused ones in
// tandem:router_kv_snapshots_refused_total, and the blocks the index holds
// per worker are published in tandem:router_kv_index_blocks{worker}.
// A worker is subscribed to once it answered a poll (its channel is
// connected); workers that leave the pool are unsubscribed and forgotten.
// The pool is checked on the same TimerQueue.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/timer_queue.h"
#include "router/cluster/cluster_metrics.h"
#include "router/cluster/kv_index.h"
#include "router/cluster/worker_pool.h"

namespace tandem::router::cluster {

struct KvSubscriberOptions {
  // how often the pool is checked for workers that came or went.
  std::chrono::milliseconds reconcile_interval{200};
  // how long one snapshot (all its parts) may take.
  std::chrono::milliseconds snapshot_deadline{15000};
  // the backoff before a resync or a retry: the first waits up to
  // retry_delay, each next one up to twice as long, at most max_retry_delay,
  // until the worker's events flowed for stable_after without a resync.
  std::chrono::milliseconds retry_delay{300};
  std::chrono::milliseconds max_retry_delay{30000};
  std::chrono::milliseconds stable_after{60000};
  // the most blocks a worker's snapshot may hold; 0 = blocks_per_capacity
  // times the blocks the worker reports it has (WorkerInfo.num_blocks).
  int64_t max_snapshot_blocks = 0;
  int64_t snapshot_blocks_per_capacity = 4;
};

class KvSubscription;

class KvSubscriber {
 public:
  // all must outlive the subscriber; `metrics` may be null.
  KvSubscriber(KvSubscriberOptions options, WorkerPool* pool, KvIndex* index,
               ClusterMetrics* metrics);
  ~KvSubscriber();

  void start();
  // stops the timers, then every subscription (their calls cancelled and
  // ended). start() after stop() subscribes again.
  void stop();
  // subscribes to new workers and drops gone ones now (a timer does it at
  // start() and every reconcile_interval until stop()).
  void reconcile();
  // snapshots taken after a worker's first one, over all workers.
  int resyncs() const;
  // snapshots refused for holding too many blocks, over all workers.
  int refusedSnapshots() const;

 private:
  // mu_ held. timers_, made if none.
  TimerQueue& timersLocked();

  const KvSubscriberOptions options_;
  WorkerPool* pool_;
  KvIndex* index_;
  ClusterMetrics* metrics_;
  std::atomic<int> resyncs_{0};
  std::atomic<int> refused_{0};
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<KvSubscription>> subscriptions_;  // guarded by mu_
  bool stop_ = false;  // guarded by mu_
  bool reconciling_ = false;  // the periodic reconcile is scheduled; guarded by mu_
  // reconciles, backoffs and snapshots; from the first start() or
  // reconcile() until stop(); guarded by mu_
  std::unique_ptr<TimerQueue> timers_;
};

}  // namespace tandem::router::cluster
