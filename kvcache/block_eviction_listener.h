// Told by the BlockPool about each cached block it evicts, before the block
// is handed out again: its bytes are still the evicted KV at that moment, so
// a listener may copy them to a lower tier (KvTierChain offloads to G2), and
// may leave the copy in flight until settle().
#pragma once

#include "kvcache/block_queue.h"
#include "kvcache/prefix_hash.h"

namespace tandem::kvcache {

class BlockEvictionListener {
 public:
  virtual ~BlockEvictionListener() = default;
  // called on the thread that allocates, inside BlockPool::allocate, once per
  // evicted block. must not call back into the pool.
  virtual void onEvict(BlockId id, BlockHash hash, BlockHash parent_hash) = 0;
  // the copies onEvict left in flight are done: called (through
  // KvCacheManager::settleEvictions) before anything writes an evicted
  // block again.
  virtual void settle() {}
};

}  // namespace tandem::kvcache
