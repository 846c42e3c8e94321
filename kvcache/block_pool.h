// The pool of fixed-size KV blocks of one worker's device tier, with the
// bookkeeping for prefix caching (as vLLM v1's BlockPool). It knows nothing
// of sequences: KvCacheManager builds per-sequence block tables on top.
//
// Every block is in exactly one state:
//   used:   ref count > 0, owned by one or more sequences (may have a hash);
//   cached: ref count 0 with a hash: its KV is still valid and findable, it
//           sits in the LRU queue and is evicted least-recently-freed first;
//   free:   ref count 0 without a hash, in the free queue.
// numFree() + numCached() + numUsed() == numBlocks() at all times.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "kvcache/block_eviction_listener.h"
#include "kvcache/block_queue.h"
#include "kvcache/kv_events.h"
#include "kvcache/prefix_hash.h"
#include "kvcache/slot_store.h"

namespace tandem::kvcache {

class BlockPool {
 public:
  // a pool of block ids [0, num_blocks), all free. allocation order of a
  // fresh pool is 0, 1, 2, ...
  explicit BlockPool(int num_blocks);

  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  int numBlocks() const { return static_cast<int>(blocks_.size()); }
  int numFree() const { return slots_.numFree(); }
  int numCached() const { return slots_.numEvictable(); }
  int numUsed() const { return numBlocks() - numFree() - numCached(); }
  // blocks an allocate() call can hand out: free ones, then evictable cached ones.
  int numAvailable() const { return numFree() + numCached(); }

  // takes n blocks, each with ref count 1 and no hash: from the head of the
  // free queue first, then by evicting least-recently-used cached blocks
  // (each eviction tells the eviction listener, while the block's bytes are
  // still intact, then drops its hash and emits BlockRemoved). fails with
  // ResourceExhausted, changing nothing, when fewer than n are available.
  absl::StatusOr<std::vector<BlockId>> allocate(int n);

  // drops one reference to each block, in the given order. a block reaching
  // ref 0 goes to the tail of the LRU queue when it has a hash (so it stays
  // findable) and to the tail of the free queue otherwise. callers that free
  // a whole sequence pass its blocks tail first, so the tail is evicted
  // before the shared prefix.
  void free(std::span<const BlockId> blocks);

  // the block registered under `hash`, or nullopt. changes nothing: callers
  // take the block with touch().
  std::optional<BlockId> findCached(BlockHash hash) const;

  // adds one reference to a used or cached block; a cached block (ref 0)
  // leaves the LRU queue and becomes used.
  void touch(BlockId id);

  // registers the used, full, computed block `id` under `hash` so findCached
  // finds it, and emits BlockStored{hash, parent_hash}. returns false and
  // changes nothing when another block already holds `hash` (two sequences
  // computed the same prefix at once): `id` then stays unhashed and is freed
  // to the free queue. `id` must be used and not registered yet.
  bool commit(BlockId id, BlockHash hash, BlockHash parent_hash);

  // drops every hash, emitting AllCleared; cached blocks become free. only
  // possible while no block is used (returns false and changes nothing
  // otherwise), because a used block's hash may still be committed against.
  bool resetPrefixCache();

  // receives every event from now on; not owned, may be null.
  void setEventListener(KvEventListener* listener) { slots_.setEventListener(listener); }
  // told about every eviction from now on; not owned, may be null.
  void setEvictionListener(BlockEvictionListener* listener) { eviction_listener_ = listener; }
  // BlockEvictionListener::settle: the evicted blocks may be written now.
  void settleEvictions() {
    if (eviction_listener_ != nullptr) eviction_listener_->settle();
  }

  int refCount(BlockId id) const;
  std::optional<BlockHash> blockHash(BlockId id) const;
  // block ids in eviction order (head first); for tests and debugging.
  std::vector<BlockId> lruOrder() const { return slots_.lruOrder(); }
  std::vector<BlockId> freeOrder() const { return slots_.freeOrder(); }

 private:
  struct BlockMeta {
    int ref_count = 0;
    bool has_hash = false;
    BlockHash hash = 0;
    BlockHash parent_hash = 0;
  };

  void checkId(BlockId id) const;
  // takes one block off the free queue or, failing that, evicts the LRU head.
  BlockId takeOne();

  std::vector<BlockMeta> blocks_;
  // free blocks; cached ones at ref 0 (evictable, least recent first).
  SlotStore slots_;
  BlockEvictionListener* eviction_listener_ = nullptr;
};

}  // namespace tandem::kvcache
