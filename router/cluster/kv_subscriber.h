// Keeps the KvIndex in step with every worker of the pool: per worker a
// thread takes a KvSnapshot (streamed in parts, assembled here and handed to
// KvIndex::applySnapshot whole), then follows Worker.KvEvents from the
// snapshot's last_event_id. It resyncs from a new snapshot (counted in
// tandem:router_kv_resyncs_total) when the worker answers OUT_OF_RANGE (it
// no longer keeps the events we need), when event ids skip, when a batch
// comes from another worker_id (the worker restarted), or when the stream
// breaks. Every snapshot after a worker's first, and every retry after a
// failed one, waits a backoff (Backoff: exponential with jitter, capped)
// that only starts over once the worker's events flowed for stable_after,
// so a worker that keeps failing or gapping cannot make the router pull
// snapshots back to back. A snapshot holding more blocks than the worker
// can plausibly store is refused (logged, counted in
// tandem:router_kv_snapshots_refused_total) and retried after the backoff.
// Every snapshot applied is counted in tandem:router_kv_snapshots_total, and
// the blocks the index holds per worker are published in
// tandem:router_kv_index_blocks{worker}. Workers that leave the pool are
// unsubscribed and forgotten. The pool is checked on a TimerQueue of the
// subscriber's own.
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

class KvSubscriber {
 public:
  // all must outlive the subscriber; `metrics` may be null.
  KvSubscriber(KvSubscriberOptions options, WorkerPool* pool, KvIndex* index,
               ClusterMetrics* metrics);
  ~KvSubscriber();

  void start();
  void stop();
  // subscribes to new workers and drops gone ones now (a timer does it at
  // start() and every reconcile_interval until stop()).
  void reconcile();
  // snapshots taken after a worker's first one, over all workers.
  int resyncs() const;
  // snapshots refused for holding too many blocks, over all workers.
  int refusedSnapshots() const;

 private:
  class Subscription;

  const KvSubscriberOptions options_;
  WorkerPool* pool_;
  KvIndex* index_;
  ClusterMetrics* metrics_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Subscription>> subscriptions_;  // guarded by mu_
  bool stop_ = false;  // guarded by mu_
  std::unique_ptr<TimerQueue> reconciler_;  // while started; guarded by mu_
  std::shared_ptr<std::atomic<int>> resyncs_;
  std::shared_ptr<std::atomic<int>> refused_;
};

}  // namespace tandem::router::cluster
