#include "kvcache/tiers/host_tier.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "absl/strings/str_format.h"
#include "common/status.h"

namespace tandem::kvcache {
namespace {

// BlockQueue indexes slots with int.
int64_t clampCapacity(int64_t capacity_blocks) {
  return std::clamp<int64_t>(capacity_blocks, 0, INT_MAX);
}

}  // namespace

HostTier::HostTier(size_t block_bytes, int64_t capacity_blocks)
    : block_bytes_(block_bytes),
      capacity_(clampCapacity(capacity_blocks)),
      // default-initialised: the kernel commits pages only when written.
      arena_(capacity_ > 0 ? new std::byte[static_cast<size_t>(capacity_) * block_bytes]
                           : nullptr),
      slots_(capacity_),
      free_(static_cast<int>(capacity_)),
      lru_(static_cast<int>(capacity_)) {
  TANDEM_CHECK(block_bytes > 0);
  for (int s = 0; s < capacity_; ++s) free_.pushBack(s);
}

int64_t HostTier::numBlocks() const {
  std::lock_guard lock(mu_);
  return lru_.size();
}

bool HostTier::contains(BlockHash hash) const {
  std::lock_guard lock(mu_);
  return by_hash_.contains(hash);
}

void HostTier::emitLocked(const KvEvent& event) {
  if (listener_ != nullptr) listener_->onKvEvent(event);
}

void HostTier::evictOneLocked() {
  const std::optional<int> slot = lru_.popFront();
  TANDEM_CHECK(slot.has_value());
  const Slot meta = slots_[*slot];
  if (sink_) sink_(meta.hash, meta.parent, std::span<const std::byte>(slotData(*slot), block_bytes_));
  by_hash_.erase(meta.hash);
  free_.pushBack(*slot);
  emitLocked(BlockRemoved{meta.hash, KvTier::kHost});
}

bool HostTier::store(BlockHash hash, BlockHash parent, std::span<const std::byte> data,
                     TierDone done) {
  if (capacity_ == 0 || data.size() != block_bytes_) return false;
  {
    std::lock_guard lock(mu_);
    auto it = by_hash_.find(hash);
    if (it != by_hash_.end()) {
      lru_.remove(it->second);
      lru_.pushBack(it->second);
    } else {
      if (free_.empty()) evictOneLocked();
      const int slot = *free_.popFront();
      std::memcpy(slotData(slot), data.data(), block_bytes_);
      slots_[slot] = Slot{hash, parent};
      by_hash_.emplace(hash, slot);
      lru_.pushBack(slot);
      emitLocked(BlockStored{hash, parent, KvTier::kHost});
    }
  }
  if (done) done(absl::OkStatus());
  return true;
}

void HostTier::load(BlockHash hash, std::span<std::byte> dst, TierDone done) {
  absl::Status status = absl::OkStatus();
  if (dst.size() != block_bytes_) {
    status = absl::InvalidArgumentError(absl::StrFormat(
        "host tier: a load needs %d bytes, got %d", block_bytes_, dst.size()));
  } else {
    std::lock_guard lock(mu_);
    auto it = by_hash_.find(hash);
    if (it == by_hash_.end()) {
      status = absl::NotFoundError(absl::StrFormat("host tier holds no block %016x", hash));
    } else {
      std::memcpy(dst.data(), slotData(it->second), block_bytes_);
      lru_.remove(it->second);
      lru_.pushBack(it->second);
    }
  }
  if (done) done(status);
}

void HostTier::remove(BlockHash hash) {
  std::lock_guard lock(mu_);
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return;
  const int slot = it->second;
  by_hash_.erase(it);
  lru_.remove(slot);
  free_.pushBack(slot);
  emitLocked(BlockRemoved{hash, KvTier::kHost});
}

void HostTier::setEventListener(KvEventListener* listener) {
  std::lock_guard lock(mu_);
  listener_ = listener;
}

void HostTier::setEvictionSink(EvictionSink sink) {
  std::lock_guard lock(mu_);
  sink_ = std::move(sink);
}

int64_t HostTier::evictDownTo(int64_t max_blocks) {
  std::lock_guard lock(mu_);
  int64_t evicted = 0;
  while (lru_.size() > std::max<int64_t>(max_blocks, 0)) {
    evictOneLocked();
    ++evicted;
  }
  return evicted;
}

std::vector<BlockHash> HostTier::lruOrder() const {
  std::lock_guard lock(mu_);
  std::vector<BlockHash> out;
  for (int slot : lru_.toVector()) out.push_back(slots_[slot].hash);
  return out;
}

}  // namespace tandem::kvcache
