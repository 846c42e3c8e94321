// The prefix cache of one simulated worker (router and planner simulators):
// block hashes kept LRU up to capacity_blocks and announced to the router's
// KvIndex as a real worker's KV events are (BlockStored when a block is
// stored, BlockRemoved when one is evicted, numbered from 1).
#pragma once

#include <cstdint>
#include <list>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "router/cluster/kv_index.h"
#include "tandem/v1/worker.pb.h"

namespace tandem::bench {

class SimPrefixCache {
 public:
  // `index` receives the events under `address`; it must outlive the cache.
  SimPrefixCache(std::string address, int64_t capacity_blocks, router::cluster::KvIndex* index);

  // how many of `hashes`' leading blocks the cache holds; those become the
  // most recent.
  int64_t leadingHits(const std::vector<kvcache::BlockHash>& hashes);
  // stores every block of `hashes` (a held one becomes the most recent),
  // evicting the least recent when full.
  void store(const std::vector<kvcache::BlockHash>& hashes);
  // the id of the last event sent (0 before any).
  uint64_t lastEventId() const { return next_event_id_ - 1; }

 private:
  void emit(kvcache::BlockHash hash, bool stored);

  const std::string address_;
  const int64_t capacity_blocks_;
  router::cluster::KvIndex* index_;
  // most recent first.
  std::list<kvcache::BlockHash> lru_;
  absl::flat_hash_map<kvcache::BlockHash, std::list<kvcache::BlockHash>::iterator> blocks_;
  uint64_t next_event_id_ = 1;
  tandem::v1::KvEvent event_;  // reused: one event at a time
};

}  // namespace tandem::bench
