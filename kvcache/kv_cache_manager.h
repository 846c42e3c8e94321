// Per-sequence block tables over a BlockPool, with prefix caching (as vLLM
// v1's KVCacheManager). The scheduler talks only to this class: it asks for
// slots for the tokens it is about to compute and learns how many prompt
// tokens are already cached; block ids leave it only as block tables for the
// model runner.
//
// A sequence holds "slots" for its first numSlots() tokens: blocks covering
// positions [0, numSlots()), block i holding positions [i*B, (i+1)*B).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "kvcache/block_pool.h"
#include "kvcache/block_eviction_listener.h"
#include "kvcache/prefix_hash.h"

namespace tandem::kvcache {

using SeqId = uint64_t;

class KvCacheManager {
 public:
  // a cache of num_blocks blocks of block_size tokens. with prefix caching
  // off, allocatePrompt never hits and commitFullBlocks does nothing.
  KvCacheManager(int num_blocks, int block_size, bool enable_prefix_caching = true);

  KvCacheManager(const KvCacheManager&) = delete;
  KvCacheManager& operator=(const KvCacheManager&) = delete;

  int blockSize() const { return block_size_; }
  int numBlocks() const { return pool_.numBlocks(); }
  // blocks that appendSlots can still take: free plus evictable cached ones.
  int numFreeBlocks() const { return pool_.numAvailable(); }
  // blocks needed to hold `num_tokens` tokens.
  int blocksForTokens(int64_t num_tokens) const;

  // starts tracking `seq` (which must be new) and gives it the longest run of
  // cached full blocks that match the prompt's prefix. returns the number of
  // prompt tokens found cached, a multiple of the block size: their KV is
  // valid and they need not be computed; the sequence then holds slots for
  // exactly that many tokens. never allocates, so it cannot fail.
  // NOTE: when all prompt tokens hit the cache, the last token must still be
  // recomputed to obtain logits, so the hit is capped at prompt.size() - 1
  // rounded down to a block boundary.
  int allocatePrompt(SeqId seq, std::span<const int32_t> prompt);

  // reserves slots for `n` more tokens of `seq`, allocating blocks as needed
  // (evicting cached blocks when the free queue runs dry). fails with
  // ResourceExhausted, changing nothing, when the pool cannot supply them.
  absl::Status appendSlots(SeqId seq, int n);

  // registers the blocks of `seq` that became full, so later requests hit
  // them. `computed_tokens` are the sequence's tokens from position 0 whose
  // KV has been written (at most numSlots()); a partial tail is ignored.
  void commitFullBlocks(SeqId seq, std::span<const int32_t> computed_tokens);

  // releases every block of `seq` (tail first, so shared prefixes outlive
  // tails in the LRU) and forgets it. unknown sequences are ignored.
  void freeSequence(SeqId seq);

  bool contains(SeqId seq) const { return seqs_.contains(seq); }
  // physical block ids of `seq`, block i covering positions [i*B, (i+1)*B).
  std::span<const BlockId> blockTable(SeqId seq) const;
  int numSlots(SeqId seq) const;

  // receives the blocks the pool evicts from its prefix cache (the tiers
  // below it offload them); not owned, null = none. set before any sequence.
  void setEvictionListener(BlockEvictionListener* listener) {
    pool_.setEvictionListener(listener);
  }
  // the listener's copies of the blocks evicted so far are done: their
  // blocks may be written (the scheduler calls it before a connector fills
  // blocks and before a step computes into them).
  void settleEvictions() { pool_.settleEvictions(); }

  // drops every cached prefix (see BlockPool::resetPrefixCache).
  bool resetPrefixCache() { return pool_.resetPrefixCache(); }
  void setEventListener(KvEventListener* listener) { pool_.setEventListener(listener); }
  const BlockPool& blockPool() const { return pool_; }

  // prompt tokens looked up and found cached by allocatePrompt, for the
  // prefix-cache hit-rate metric.
  int64_t prefixQueriedTokens() const { return queried_tokens_; }
  int64_t prefixHitTokens() const { return hit_tokens_; }

 private:
  struct SeqBlocks {
    std::vector<BlockId> blocks;
    int num_slots = 0;
    // hashes of the sequence's full computed blocks, in order.
    std::vector<BlockHash> hashes;
    // blocks [0, num_committed) were offered to the pool's prefix cache.
    int num_committed = 0;
  };

  SeqBlocks& get(SeqId seq);
  const SeqBlocks& get(SeqId seq) const;

  const int block_size_;
  const bool enable_prefix_caching_;
  BlockPool pool_;
  absl::flat_hash_map<SeqId, SeqBlocks> seqs_;
  int64_t queried_tokens_ = 0;
  int64_t hit_tokens_ = 0;
};

}  // namespace tandem::kvcache
