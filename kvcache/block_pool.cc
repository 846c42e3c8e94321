#include "kvcache/block_pool.h"

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "common/status.h"

namespace tandem::kvcache {

BlockPool::BlockPool(int num_blocks) : blocks_(num_blocks), slots_(num_blocks, KvTier::kDevice) {}

void BlockPool::checkId(BlockId id) const {
  TANDEM_CHECK(id >= 0 && id < numBlocks());
}

BlockId BlockPool::takeOne() {
  if (auto id = slots_.takeFree()) return *id;
  auto id = slots_.popLeastRecent();
  TANDEM_CHECK(id.has_value());
  BlockMeta& meta = blocks_[*id];
  TANDEM_CHECK(meta.has_hash && meta.ref_count == 0);
  if (eviction_listener_ != nullptr) eviction_listener_->onEvict(*id, meta.hash, meta.parent_hash);
  slots_.unindex(meta.hash);
  meta.has_hash = false;
  slots_.announceRemoved(meta.hash);
  return *id;
}

absl::StatusOr<std::vector<BlockId>> BlockPool::allocate(int n) {
  TANDEM_CHECK(n >= 0);
  if (n > numAvailable()) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "kv cache has %d blocks available, %d requested", numAvailable(), n));
  }
  std::vector<BlockId> out;
  out.reserve(n);
  for (int i = 0; i < n; ++i) {
    const BlockId id = takeOne();
    blocks_[id].ref_count = 1;
    out.push_back(id);
  }
  return out;
}

void BlockPool::free(std::span<const BlockId> blocks) {
  for (BlockId id : blocks) {
    checkId(id);
    BlockMeta& meta = blocks_[id];
    TANDEM_CHECK(meta.ref_count > 0);
    if (--meta.ref_count > 0) continue;
    if (meta.has_hash) {
      slots_.makeEvictable(id);
    } else {
      slots_.release(id);
    }
  }
}

std::optional<BlockId> BlockPool::findCached(BlockHash hash) const {
  return slots_.find(hash);
}

void BlockPool::touch(BlockId id) {
  checkId(id);
  BlockMeta& meta = blocks_[id];
  if (meta.ref_count == 0) {
    // only hashed blocks can be found, so a block at ref 0 here is in the lru.
    TANDEM_CHECK(meta.has_hash);
    slots_.pin(id);
  }
  ++meta.ref_count;
}

bool BlockPool::commit(BlockId id, BlockHash hash, BlockHash parent_hash) {
  checkId(id);
  BlockMeta& meta = blocks_[id];
  TANDEM_CHECK(meta.ref_count > 0 && !meta.has_hash);
  if (!slots_.index(hash, id)) return false;
  meta.has_hash = true;
  meta.hash = hash;
  meta.parent_hash = parent_hash;
  slots_.announceStored(hash, parent_hash);
  return true;
}

bool BlockPool::resetPrefixCache() {
  if (numUsed() > 0) return false;
  while (auto id = slots_.popLeastRecent()) {
    blocks_[*id].has_hash = false;
    slots_.release(*id);
  }
  slots_.clearIndex();
  slots_.announceCleared();
  return true;
}

int BlockPool::refCount(BlockId id) const {
  checkId(id);
  return blocks_[id].ref_count;
}

std::optional<BlockHash> BlockPool::blockHash(BlockId id) const {
  checkId(id);
  if (!blocks_[id].has_hash) return std::nullopt;
  return blocks_[id].hash;
}

}  // namespace tandem::kvcache
