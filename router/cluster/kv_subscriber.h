// Keeps the KvIndex in step with every worker of the pool: per worker a
// thread takes a KvSnapshot, then follows Worker.KvEvents from the
// snapshot's last_event_id. It resyncs from a new snapshot (counted in
// tandem:router_kv_resyncs_total) when the worker answers OUT_OF_RANGE (it
// no longer keeps the events we need), when event ids skip, when a batch
// comes from another worker_id (the worker restarted), or when the stream
// breaks. Every snapshot applied is counted in
// tandem:router_kv_snapshots_total, and the blocks the index holds per worker
// are published in tandem:router_kv_index_blocks{worker}. Workers that leave
// the pool are unsubscribed and forgotten. The pool is checked on a
// TimerQueue of the subscriber's own.
#pragma once

#include <chrono>
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
  std::chrono::milliseconds snapshot_deadline{5000};
  // wait before retrying a worker whose snapshot or stream failed.
  std::chrono::milliseconds retry_delay{300};
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
};

}  // namespace tandem::router::cluster
