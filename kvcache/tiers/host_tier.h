// G2: KV blocks in host memory, below the engine's pool. One arena of
// capacity_blocks slots of block_bytes each, a hash -> slot index and an LRU
// of the slots in use. store() is a memcpy into a free slot (evicting the
// least-recently-used block when none is free), load() a memcpy out; both
// complete inline, so `done` runs before they return.
//
// An evicted block is first handed to the eviction sink (the tier chain
// demotes it to G3 from there) while its bytes are still in the slot, then
// BlockRemoved{hash, kHost} is emitted. Thread-safe: one mutex; the sink and
// the event listener run under it and must not call back into the tier.
//
// On a GPU backend the engine gives it pinned memory (Backend::
// allocatePinnedHost) and evicted blocks are copied straight into reserved
// slots on the transfer stream (reserve, then commit once the copy is
// done); on the CPU backend plain memory is as fast as it gets. Blocks carry no checksum: host
// memory is trusted like the engine's own pool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "kvcache/slot_store.h"
#include "kvcache/tiers/lower_tier.h"

namespace tandem::kvcache {

class HostTier final : public LowerTier {
 public:
  // receives each evicted block (hash, parent, its bytes, valid only during
  // the call) before its slot is reused.
  using EvictionSink =
      std::function<void(BlockHash hash, BlockHash parent, std::span<const std::byte> data)>;

  // the slots' memory when the caller provides it (a GPU backend's pinned
  // memory, so G1 <-> G2 copies are DMA): at least capacity * block_bytes.
  using Arena = std::shared_ptr<std::byte>;

  // an empty tier of `capacity_blocks` blocks of `block_bytes` bytes, in
  // `arena`, or when null in an arena allocated here and not touched (pages
  // are committed as blocks arrive).
  HostTier(size_t block_bytes, int64_t capacity_blocks, Arena arena = nullptr);

  HostTier(const HostTier&) = delete;
  HostTier& operator=(const HostTier&) = delete;

  // ---- LowerTier ----
  KvTier tier() const override { return KvTier::kHost; }
  size_t blockBytes() const override { return block_bytes_; }
  int64_t capacityBlocks() const override { return capacity_; }
  int64_t numBlocks() const override;
  bool contains(BlockHash hash) const override;
  // false only when the tier has no capacity, every slot is reserved, or
  // data is not blockBytes() long. storing a hash already held marks it most-recently-used and
  // succeeds without an event.
  bool store(BlockHash hash, BlockHash parent, std::span<const std::byte> data,
             TierDone done) override;
  // NotFound when absent; InvalidArgument when dst is not blockBytes() long.
  void load(BlockHash hash, std::span<std::byte> dst, TierDone done) override;
  // drops the block (BlockRemoved, no sink call); absent hashes are ignored.
  void remove(BlockHash hash) override;
  void setEventListener(KvEventListener* listener) override;

  // ---- a store in two halves, for a copy that runs while the caller goes
  // on (a device backend's transfer stream writes the slot) ----
  // a slot for `hash`, taken now (evicting the least recently used block
  // when none is free) and neither held nor evictable until commit(); empty
  // when the tier has no capacity or holds `hash` already (then marked most
  // recently used).
  std::span<std::byte> reserve(BlockHash hash);
  // the reserved slot's bytes are `hash`'s now: held, evictable, announced.
  void commit(BlockHash hash, BlockHash parent, std::span<std::byte> slot);

  // ---- G2 policy hooks ----
  void setEvictionSink(EvictionSink sink);
  // evicts least-recently-used blocks (through the sink) until at most
  // `max_blocks` remain; returns how many were evicted.
  int64_t evictDownTo(int64_t max_blocks);
  // hashes from least to most recently used (for tests and debugging).
  std::vector<BlockHash> lruOrder() const;

 private:
  struct Slot {
    BlockHash hash = 0;
    BlockHash parent = 0;
  };

  std::byte* slotData(int slot) const { return arena_.get() + static_cast<size_t>(slot) * block_bytes_; }
  // takes a slot for a new block (evicting one when none is free).
  // requires the lock and capacity.
  int takeSlotLocked();
  // evicts the LRU head into the free list. requires the lock and a used slot.
  void evictOneLocked();

  const size_t block_bytes_;
  const int64_t capacity_;
  Arena arena_;

  mutable std::mutex mu_;
  std::vector<Slot> slots_;  // guarded by mu_
  // guarded by mu_; every held block is evictable.
  SlotStore store_;
  EvictionSink sink_;                              // guarded by mu_
};

}  // namespace tandem::kvcache
