#include "kvcache/kv_cache_manager.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "common/status.h"

namespace tandem::kvcache {

KvCacheManager::KvCacheManager(int num_blocks, int block_size, bool enable_prefix_caching)
    : block_size_(block_size),
      enable_prefix_caching_(enable_prefix_caching),
      pool_(num_blocks) {
  TANDEM_CHECK(block_size > 0);
}

int KvCacheManager::blocksForTokens(int64_t num_tokens) const {
  return static_cast<int>((num_tokens + block_size_ - 1) / block_size_);
}

KvCacheManager::SeqBlocks& KvCacheManager::get(SeqId seq) {
  auto it = seqs_.find(seq);
  TANDEM_CHECK(it != seqs_.end());
  return it->second;
}

const KvCacheManager::SeqBlocks& KvCacheManager::get(SeqId seq) const {
  auto it = seqs_.find(seq);
  TANDEM_CHECK(it != seqs_.end());
  return it->second;
}

int KvCacheManager::allocatePrompt(SeqId seq, std::span<const int32_t> prompt) {
  TANDEM_CHECK(!seqs_.contains(seq));
  SeqBlocks& s = seqs_[seq];
  if (!enable_prefix_caching_ || prompt.empty()) return 0;
  queried_tokens_ += static_cast<int64_t>(prompt.size());

  // NOTE: when all tokens hit the cache, we must recompute the last token to
  // obtain logits; so look up at most the full blocks of prompt[0, len-1).
  const size_t max_hit_blocks = (prompt.size() - 1) / block_size_;
  const auto lookup = prompt.first(max_hit_blocks * block_size_);
  BlockHash parent = kRootParentHash;
  for (size_t b = 0; b < max_hit_blocks; ++b) {
    const BlockHash h = hashBlock(parent, lookup.subspan(b * block_size_, block_size_));
    auto id = pool_.findCached(h);
    if (!id) break;
    s.hashes.push_back(h);
    s.blocks.push_back(*id);
    parent = h;
  }
  // take the hits only after the lookup so a miss leaves nothing half-done.
  for (BlockId id : s.blocks) pool_.touch(id);
  s.num_committed = static_cast<int>(s.blocks.size());
  s.num_slots = static_cast<int>(s.blocks.size()) * block_size_;
  hit_tokens_ += s.num_slots;
  return s.num_slots;
}

absl::Status KvCacheManager::appendSlots(SeqId seq, int n) {
  TANDEM_CHECK(n >= 0);
  SeqBlocks& s = get(seq);
  const int needed = blocksForTokens(static_cast<int64_t>(s.num_slots) + n) -
                     static_cast<int>(s.blocks.size());
  if (needed > 0) {
    auto blocks = pool_.allocate(needed);
    if (!blocks.ok()) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "no space in kv cache: sequence %d needs %d more blocks, %d available", seq,
          needed, pool_.numAvailable()));
    }
    s.blocks.insert(s.blocks.end(), blocks->begin(), blocks->end());
  }
  s.num_slots += n;
  return absl::OkStatus();
}

void KvCacheManager::commitFullBlocks(SeqId seq, std::span<const int32_t> computed_tokens) {
  if (!enable_prefix_caching_) return;
  SeqBlocks& s = get(seq);
  TANDEM_CHECK(computed_tokens.size() <= static_cast<size_t>(s.num_slots));
  extendBlockHashes(computed_tokens, block_size_, s.hashes);
  for (; s.num_committed < static_cast<int>(s.hashes.size()); ++s.num_committed) {
    const int b = s.num_committed;
    const BlockHash parent = b == 0 ? kRootParentHash : s.hashes[b - 1];
    // a false return means another block already caches these tokens; this
    // one then simply stays private to the sequence.
    pool_.commit(s.blocks[b], s.hashes[b], parent);
  }
}

void KvCacheManager::freeSequence(SeqId seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  std::vector<BlockId> reversed(it->second.blocks.rbegin(), it->second.blocks.rend());
  pool_.free(reversed);
  seqs_.erase(it);
}

std::span<const BlockId> KvCacheManager::blockTable(SeqId seq) const {
  return get(seq).blocks;
}

int KvCacheManager::numSlots(SeqId seq) const { return get(seq).num_slots; }

}  // namespace tandem::kvcache
