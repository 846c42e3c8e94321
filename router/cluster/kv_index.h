// Which worker holds which KV block, on which tier: per worker (by address)
// the chained block hashes (kvcache/prefix_hash.h) its KV events announced,
// each with the tiers (device, host, disk) holding it. Fed by KvSubscriber
// (snapshots, then events in id order); asked by the route planner how many
// leading blocks of a prompt's hash chain each worker holds, per tier, in
// one walk of the chain over a hash -> holders map (no per-worker lookups).
//
// Robustness: events are numbered per worker incarnation. An event whose id
// is at or below the last one applied (a duplicate) changes nothing; one that
// skips ids (lost or reordered events) is refused (applyEvent returns false)
// and the caller resyncs from a snapshot, which replaces everything known of
// the worker (a restart with a new worker id, a router that restarted). An
// unnumbered event (id 0) is applied as is.
//
// Bounded memory: a worker holds at most capacity_slack x its reported
// capacity (setWorkerCapacity: all tiers' blocks) plus capacity_floor_blocks
// (a worker flooding BlockStored events cannot grow the index past it), and
// the whole index at most max_blocks (worker, block) entries; past either
// bound the oldest entry of the worker over its bound (for the global one:
// the worker holding most) is evicted, counted in evictions(). Thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "kvcache/prefix_hash.h"
#include "tandem/v1/worker.pb.h"

namespace tandem::router::cluster {

struct KvIndexOptions {
  // (worker, block) entries over all workers; 0 = unbounded.
  size_t max_blocks = 4'000'000;
  // a worker's bound: capacity_slack x its capacity + capacity_floor_blocks
  // (events race evictions, and tiers announce before they drop).
  double capacity_slack = 2.0;
  int64_t capacity_floor_blocks = 1024;
};

// the leading blocks of a hash chain one worker holds, by the cheapest tier
// that has them: the first `device` blocks are on device, the first `host`
// (>= device) on device or host, the first `any` (>= host) on some tier.
struct TierMatch {
  int device = 0;
  int host = 0;
  int any = 0;
  bool operator==(const TierMatch&) const = default;
};

class KvIndex {
 public:
  const KvIndexOptions& options() const { return options_; }
  explicit KvIndex(KvIndexOptions options = {});

  // replaces what the index knows of the worker at `address` with a
  // snapshot of incarnation `worker_id` (events after last_event_id follow).
  void applySnapshot(const std::string& address, const tandem::v1::KvSnapshotResponse& snapshot);
  // applies one event of the worker's current incarnation; false (nothing
  // applied) when its id skips ids after the last one applied: resync.
  bool applyEvent(const std::string& address, const tandem::v1::KvEvent& event);
  // forgets the worker (it left the pool).
  void removeWorker(const std::string& address);
  // the blocks the worker can hold on all its tiers (WorkerInfo / Stats);
  // <= 0 = unknown (only the global bound applies). Evicts at once past it.
  void setWorkerCapacity(const std::string& address, int64_t capacity_blocks);

  // the leading blocks of a prompt, given its chained hashes in order, that
  // the worker holds on any tier (0 for an unknown worker).
  int leadingBlocks(const std::string& address, std::span<const kvcache::BlockHash> hashes) const;
  TierMatch match(const std::string& address, std::span<const kvcache::BlockHash> hashes) const;
  // every worker holding at least the first block, with its match.
  std::vector<std::pair<std::string, TierMatch>> matchAll(
      std::span<const kvcache::BlockHash> hashes) const;

  // blocks the index holds for the worker / in all (tests, metrics).
  size_t numBlocks(const std::string& address) const;
  size_t totalBlocks() const;
  // an estimate of the memory the index uses, in bytes.
  size_t memoryBytes() const;
  // entries evicted by the bounds since the start.
  uint64_t evictions() const;
  // the bound of one worker (SIZE_MAX when none).
  size_t workerLimit(const std::string& address) const;

 private:
  struct Holder {
    uint16_t worker;
    uint8_t tiers;    // bit per tier
    uint32_t stamp;   // matches the worker's order entry that added it
  };
  using Holders = absl::InlinedVector<Holder, 1>;
  struct Worker {
    std::string address;
    bool used = false;
    size_t count = 0;
    size_t limit = SIZE_MAX;
    uint64_t last_event_id = 0;
    uint32_t next_stamp = 0;
    // (hash, stamp) in insertion order; entries whose holder is gone or
    // re-stamped are stale and skipped.
    std::deque<std::pair<kvcache::BlockHash, uint32_t>> order;
  };

  // mu_ held.
  int slotLocked(const std::string& address, bool create);
  void storeLocked(int w, kvcache::BlockHash hash, int tier);
  void removeLocked(int w, kvcache::BlockHash hash, int tier);
  void clearLocked(int w);
  void evictOldestLocked(int w);
  void enforceBoundsLocked(int w);
  void compactOrderLocked(int w);
  // fills per-slot matches for slots holding the chain's first block.
  void walkLocked(std::span<const kvcache::BlockHash> hashes, std::vector<TierMatch>& out) const;

  const KvIndexOptions options_;
  mutable std::mutex mu_;
  absl::flat_hash_map<kvcache::BlockHash, Holders> blocks_;  // guarded by mu_
  std::vector<Worker> workers_;                               // by slot; guarded by mu_
  absl::flat_hash_map<std::string, int> slots_;               // guarded by mu_
  // the slot slotLocked found last (events come in runs of one worker's);
  // -1 = none. guarded by mu_
  int last_slot_ = -1;
  size_t total_ = 0;                                          // guarded by mu_
  uint64_t evictions_ = 0;      // guarded by mu_
};

}  // namespace tandem::router::cluster
