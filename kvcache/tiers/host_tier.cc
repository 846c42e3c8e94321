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

HostTier::HostTier(size_t block_bytes, int64_t capacity_blocks, Arena arena)
    : block_bytes_(block_bytes),
      capacity_(clampCapacity(capacity_blocks)),
      // default-initialised: the kernel commits pages only when written.
      arena_(arena != nullptr ? std::move(arena)
             : capacity_ > 0
                 ? Arena(new std::byte[static_cast<size_t>(capacity_) * block_bytes],
                         std::default_delete<std::byte[]>())
                 : nullptr),
      slots_(capacity_),
      store_(static_cast<int>(capacity_), KvTier::kHost) {
  TANDEM_CHECK(block_bytes > 0);
}

int64_t HostTier::numBlocks() const {
  std::lock_guard lock(mu_);
  return store_.numEvictable();
}

bool HostTier::contains(BlockHash hash) const {
  std::lock_guard lock(mu_);
  return store_.holds(hash);
}

void HostTier::evictOneLocked() {
  const std::optional<int> slot = store_.popLeastRecent();
  TANDEM_CHECK(slot.has_value());
  const Slot meta = slots_[*slot];
  if (sink_) sink_(meta.hash, meta.parent, std::span<const std::byte>(slotData(*slot), block_bytes_));
  store_.unindex(meta.hash);
  store_.release(*slot);
  store_.announceRemoved(meta.hash);
}

bool HostTier::store(BlockHash hash, BlockHash parent, std::span<const std::byte> data,
                     TierDone done) {
  if (capacity_ == 0 || data.size() != block_bytes_) return false;
  {
    std::lock_guard lock(mu_);
    if (const std::optional<int> held = store_.find(hash)) {
      store_.touch(*held);
    } else {
      if (store_.numFree() == 0 && store_.numEvictable() == 0) return false;  // all reserved
      const int slot = takeSlotLocked();
      std::memcpy(slotData(slot), data.data(), block_bytes_);
      slots_[slot] = Slot{hash, parent};
      store_.index(hash, slot);
      store_.makeEvictable(slot);
      store_.announceStored(hash, parent);
    }
  }
  if (done) done(absl::OkStatus());
  return true;
}

int HostTier::takeSlotLocked() {
  if (store_.numFree() == 0) evictOneLocked();
  return *store_.takeFree();
}

std::span<std::byte> HostTier::reserve(BlockHash hash) {
  if (capacity_ == 0) return {};
  std::lock_guard lock(mu_);
  if (const std::optional<int> held = store_.find(hash)) {
    store_.touch(*held);
    return {};
  }
  // every slot reserved already: nothing evictable to make room with
  if (store_.numFree() == 0 && store_.numEvictable() == 0) return {};
  return {slotData(takeSlotLocked()), block_bytes_};
}

void HostTier::commit(BlockHash hash, BlockHash parent, std::span<std::byte> slot_bytes) {
  TANDEM_CHECK(slot_bytes.size() == block_bytes_ && slot_bytes.data() >= arena_.get());
  const auto slot = static_cast<int>((slot_bytes.data() - arena_.get()) / block_bytes_);
  TANDEM_CHECK(slot < capacity_);
  std::lock_guard lock(mu_);
  slots_[slot] = Slot{hash, parent};
  if (!store_.index(hash, slot)) {  // stored meanwhile by store(): one copy is enough
    store_.release(slot);
    return;
  }
  store_.makeEvictable(slot);
  store_.announceStored(hash, parent);
}

void HostTier::load(BlockHash hash, std::span<std::byte> dst, TierDone done) {
  absl::Status status = absl::OkStatus();
  if (dst.size() != block_bytes_) {
    status = absl::InvalidArgumentError(absl::StrFormat(
        "host tier: a load needs %d bytes, got %d", block_bytes_, dst.size()));
  } else {
    std::lock_guard lock(mu_);
    const std::optional<int> slot = store_.find(hash);
    if (!slot) {
      status = absl::NotFoundError(absl::StrFormat("host tier holds no block %016x", hash));
    } else {
      std::memcpy(dst.data(), slotData(*slot), block_bytes_);
      store_.touch(*slot);
    }
  }
  if (done) done(status);
}

void HostTier::remove(BlockHash hash) {
  std::lock_guard lock(mu_);
  const std::optional<int> slot = store_.find(hash);
  if (!slot) return;
  store_.unindex(hash);
  store_.pin(*slot);
  store_.release(*slot);
  store_.announceRemoved(hash);
}

void HostTier::setEventListener(KvEventListener* listener) {
  std::lock_guard lock(mu_);
  store_.setEventListener(listener);
}

void HostTier::setEvictionSink(EvictionSink sink) {
  std::lock_guard lock(mu_);
  sink_ = std::move(sink);
}

int64_t HostTier::evictDownTo(int64_t max_blocks) {
  std::lock_guard lock(mu_);
  int64_t evicted = 0;
  while (store_.numEvictable() > std::max<int64_t>(max_blocks, 0)) {
    evictOneLocked();
    ++evicted;
  }
  return evicted;
}

std::vector<BlockHash> HostTier::lruOrder() const {
  std::lock_guard lock(mu_);
  std::vector<BlockHash> out;
  for (int slot : store_.lruOrder()) out.push_back(slots_[slot].hash);
  return out;
}

}  // namespace tandem::kvcache
