// One worker's KV events, followed for the KvIndex without a thread of its
// own: a KvSnapshot call (its parts assembled and handed to
// KvIndex::applySnapshot whole), then Worker.KvEvents from the snapshot's
// last_event_id, each an asynchronous call whose steps run on the
// completion thread the subscriptions share; waiting out a backoff and
// applying a snapshot run on the subscriber's TimerQueue. So a router in
// front of hundreds of workers runs their subscriptions on one completion
// thread and one timer thread, not a thread per worker.
//
// It resyncs from a new snapshot when the worker answers OUT_OF_RANGE (it
// no longer keeps the events needed), when event ids skip, when a batch
// comes from another worker_id (the worker restarted), or when the stream
// breaks. Every snapshot after the worker's first, and every retry after a
// failed one, waits a backoff (exponential with jitter, capped) that only
// starts over once the worker's events flowed for stable_after. A snapshot
// holding more blocks than max_blocks is refused (logged, counted) and
// retried after the backoff.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "common/backoff.h"
#include "common/grpc/completion_thread.h"
#include "common/outstanding.h"
#include "common/timer_queue.h"
#include "router/cluster/cluster_metrics.h"
#include "router/cluster/kv_index.h"
#include "tandem/v1/worker.grpc.pb.h"

namespace tandem::router::cluster {

struct KvSubscriberOptions;

class KvSubscription : public std::enable_shared_from_this<KvSubscription> {
 public:
  // what every subscription of one subscriber shares; all outlive it.
  struct Shared {
    const KvSubscriberOptions* options = nullptr;
    KvIndex* index = nullptr;
    ClusterMetrics* metrics = nullptr;  // may be null
    TimerQueue* timers = nullptr;       // backoffs and snapshot application
    grpc_util::CompletionThread* calls = nullptr;  // where the calls' steps run
    std::atomic<int>* resyncs = nullptr;
    std::atomic<int>* refused = nullptr;
  };

  KvSubscription(const Shared& shared, std::string address, int64_t max_blocks,
                 std::shared_ptr<tandem::v1::Worker::Stub> stub);

  // takes the first snapshot now (never blocks).
  void start();
  // cancels the call in flight and waits until it ended; nothing of this
  // subscription runs on the completion thread afterwards, and the timers it set
  // do nothing. Idempotent.
  void stop();

 private:
  class SnapshotCall;
  class EventsCall;
  friend class SnapshotCall;
  friend class EventsCall;

  // starts a KvSnapshot call unless stopping.
  void fetchSnapshot();
  // from SnapshotCall: the assembled snapshot, or nothing (failed, refused).
  void onSnapshot(std::unique_ptr<tandem::v1::KvSnapshotResponse> snapshot);
  // on the timer thread: applies it, then follows its events.
  void applySnapshot(const tandem::v1::KvSnapshotResponse& snapshot);
  // from EventsCall: the stream ended (resync, broken, cancelled).
  void onEventsEnded(std::chrono::steady_clock::time_point followed_since);
  // waits the next backoff on the timers, then fetches a snapshot.
  void retryLater();
  // marks the call in flight as `context` (null: none); false when stopping.
  bool setCall(grpc::ClientContext* context);
  void publishBlocks();

  const Shared shared_;
  const std::string address_;
  const int64_t max_blocks_;
  std::shared_ptr<tandem::v1::Worker::Stub> stub_;

  std::mutex mu_;
  std::condition_variable idle_;
  bool stop_ = false;                         // guarded by mu_
  grpc::ClientContext* in_flight_ = nullptr;  // the call in flight; guarded by mu_
  // call objects not yet destroyed (a call ends, then deletes itself on the
  // completion thread): stop() waits for none, so no context of ours is
  // destroyed there after it returned
  Outstanding calls_alive_;
  bool synced_before_ = false;                // guarded by mu_
  Backoff backoff_;                           // guarded by mu_
};

}  // namespace tandem::router::cluster
