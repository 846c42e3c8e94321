// Numbers a worker's KV events and keeps them for subscribers (the router's
// KV index), as Dynamo's KV event publisher: every event gets the next
// event_id (1, 2, 3, ... per process), the last `capacity` events are kept
// for readers that fell behind, and the set of blocks currently stored is
// kept alongside so a reader that fell too far behind (or a router that
// restarted) resyncs from a snapshot and continues after its last_event_id.
//
// The cache emits events on the engine thread (onKvEvent); readers call
// readAfter/snapshot from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "kvcache/kv_events.h"

namespace tandem::kvcache {

struct NumberedKvEvent {
  uint64_t event_id = 0;
  KvEvent event;
};

struct KvSnapshot {
  // the snapshot reflects every event up to and including this one.
  uint64_t last_event_id = 0;
  // blocks stored now (hash, parent, tier), in no particular order.
  std::vector<BlockStored> blocks;
};

class KvEventLog : public KvEventListener {
 public:
  // keeps the last `capacity` events (> 0).
  explicit KvEventLog(size_t capacity = 1 << 16);

  // numbers and keeps `event`, updates the stored set and wakes readers.
  void onKvEvent(const KvEvent& event) override;

  // up to `max_events` events with ids above `after_id`, oldest first. waits
  // up to `wait` when there are none yet (returns an empty list then).
  // OutOfRange when event after_id + 1 is no longer kept, or when after_id
  // is above lastEventId() (an id from before a restart): take a snapshot.
  absl::StatusOr<std::vector<NumberedKvEvent>> readAfter(uint64_t after_id, size_t max_events,
                                                         std::chrono::milliseconds wait) const;

  KvSnapshot snapshot() const;
  uint64_t lastEventId() const;

  // wakes every reader waiting in readAfter, and makes later calls return
  // at once (on shutdown).
  void wakeAll();

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::deque<NumberedKvEvent> events_;                         // guarded by mu_
  uint64_t last_id_ = 0;                                       // guarded by mu_
  bool woken_ = false;                                         // guarded by mu_
  absl::flat_hash_map<std::pair<BlockHash, KvTier>, BlockHash> stored_;  // -> parent; guarded
};

}  // namespace tandem::kvcache
