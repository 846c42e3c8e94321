// Told by the BlockPool about each cached block it evicts, before the block
// is handed out again: its bytes are still the evicted KV at that moment, so
// a listener may copy them to a lower tier (KvTierChain offloads to G2).
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
};

}  // namespace tandem::kvcache
