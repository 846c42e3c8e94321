// The bookkeeping every hash-keyed block store shares (the block pool, the
// host tier, the disk tier): slots [0, capacity) that are free or hold a
// block findable by its hash; of those, the evictable ones in least-recently
// used order; and the KV events that announce what is stored and removed.
// What a slot holds beyond its hash (reference counts, pins, I/O states),
// and the locking, stay with the store that owns the SlotStore: it is not
// thread-safe, and it never decides on its own when a slot is evictable.
#pragma once

#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "kvcache/block_queue.h"
#include "kvcache/kv_events.h"

namespace tandem::kvcache {

class SlotStore {
 public:
  enum class Start { kAllFree, kEmpty };
  // `capacity` slots, all free (or none free yet: a store rebuilt from disk
  // releases its slots itself); events name `tier`.
  SlotStore(int capacity, KvTier tier, Start start = Start::kAllFree);

  SlotStore(const SlotStore&) = delete;
  SlotStore& operator=(const SlotStore&) = delete;

  int capacity() const { return capacity_; }
  int numFree() const { return free_.size(); }
  int numEvictable() const { return lru_.size(); }

  // ---- the hash index ----
  std::optional<int> find(BlockHash hash) const;
  bool holds(BlockHash hash) const { return by_hash_.contains(hash); }
  // registers `slot` under `hash`; false (nothing changes) when a slot
  // already holds `hash`.
  bool index(BlockHash hash, int slot) { return by_hash_.try_emplace(hash, slot).second; }
  // points `hash` at `slot`, whatever held it before.
  void reindex(BlockHash hash, int slot) { by_hash_[hash] = slot; }
  void unindex(BlockHash hash) { by_hash_.erase(hash); }
  void clearIndex() { by_hash_.clear(); }

  // ---- free slots ----
  std::optional<int> takeFree() { return free_.popFront(); }
  // `slot` is free again (it must be neither free nor evictable).
  void release(int slot) { free_.pushBack(slot); }
  std::vector<int> freeOrder() const { return free_.toVector(); }

  // ---- evictable slots, least recently used first ----
  // `slot` becomes evictable, as the most recently used.
  void makeEvictable(int slot) { lru_.pushBack(slot); }
  // `slot` (evictable) is not any more.
  void pin(int slot) { lru_.remove(slot); }
  // `slot` (evictable) becomes the most recently used.
  void touch(int slot) {
    lru_.remove(slot);
    lru_.pushBack(slot);
  }
  bool evictable(int slot) const { return lru_.contains(slot); }
  // the least recently used evictable slot, no longer evictable; nullopt
  // when none is. The caller unindexes its hash and announces it removed.
  std::optional<int> popLeastRecent() { return lru_.popFront(); }
  std::vector<int> lruOrder() const { return lru_.toVector(); }

  // ---- events ----
  // receives every event from now on; not owned, may be null.
  void setEventListener(KvEventListener* listener) { listener_ = listener; }
  void announceStored(BlockHash hash, BlockHash parent) { emit(BlockStored{hash, parent, tier_}); }
  void announceRemoved(BlockHash hash) { emit(BlockRemoved{hash, tier_}); }
  void announceCleared() { emit(AllCleared{}); }

 private:
  void emit(const KvEvent& event) {
    if (listener_ != nullptr) listener_->onKvEvent(event);
  }

  const int capacity_;
  const KvTier tier_;
  BlockQueue free_;
  BlockQueue lru_;
  absl::flat_hash_map<BlockHash, int> by_hash_;
  KvEventListener* listener_ = nullptr;
};

}  // namespace tandem::kvcache
