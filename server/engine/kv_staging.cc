#include "server/engine/kv_staging.h"

#include <cstdio>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace tandem::engine {

// the free slots, shared with the leases so that one returned late finds
// its pool still there.
struct KvStaging::Lease::Pool {
  mutable std::mutex mu;
  std::vector<int32_t> free;  // guarded by mu; a stack
};

KvStaging::Lease& KvStaging::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    reset();
    pool_ = std::move(other.pool_);
    slots_ = std::move(other.slots_);
    other.slots_.clear();
  }
  return *this;
}

void KvStaging::Lease::reset() {
  if (pool_ != nullptr) {
    std::lock_guard lock(pool_->mu);
    pool_->free.insert(pool_->free.end(), slots_.rbegin(), slots_.rend());
  }
  pool_.reset();
  slots_.clear();
}

absl::StatusOr<KvStagingPtr> KvStaging::create(kernels::Backend& backend,
                                               const ModelRunner& runner, int num_slots,
                                               const HostMemoryFn& host_memory) {
  if (num_slots < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("the KV staging pool needs at least one slot, not ", num_slots));
  }
  const size_t block_bytes = runner.kvLayout().blockBytes();
  const size_t bytes = block_bytes * static_cast<size_t>(num_slots);
  KvStagingPtr staging(new KvStaging(runner, block_bytes, num_slots));
  if (host_memory) {
    ASSIGN_OR_RETURN(staging->data_, host_memory(bytes));
    absl::StatusOr<kernels::BufferPtr> pinned = backend.pinHost(staging->data_, bytes);
    if (pinned.ok()) {
      staging->pinned_ = std::move(*pinned);
    } else {
      std::fprintf(stderr, "tandem: KV staging memory stays pageable (%s)\n",
                   pinned.status().ToString().c_str());
    }
  } else {
    ASSIGN_OR_RETURN(staging->owned_memory_, backend.allocatePinnedHost(bytes));
    staging->data_ = staging->owned_memory_->data();
  }
  ASSIGN_OR_RETURN(staging->stream_, backend.createTransferStream());
  staging->pool_ = std::make_shared<Lease::Pool>();
  // a stack, slot 0 on top: small transfers reuse the same warm slots
  staging->pool_->free.resize(static_cast<size_t>(num_slots));
  std::iota(staging->pool_->free.rbegin(), staging->pool_->free.rend(), 0);
  return staging;
}

KvStaging::~KvStaging() {
  std::lock_guard lock(stream_mu_);
  if (stream_ != nullptr) stream_->synchronize().IgnoreError();
  stream_.reset();
  // unpin before the memory goes (the given memory's owner frees it later)
  pinned_.reset();
  owned_memory_.reset();
}

absl::StatusOr<KvStaging::Lease> KvStaging::acquire(int n) {
  if (n < 1) return absl::InvalidArgumentError("a KV staging lease needs at least one slot");
  if (n > capacity_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        n, " KV blocks do not fit the staging pool of ", capacity_,
        " blocks (", block_bytes_, " bytes each); raise --kv-staging-bytes"));
  }
  std::lock_guard lock(pool_->mu);
  std::vector<int32_t>& free = pool_->free;
  if (static_cast<int>(free.size()) < n) {
    return absl::ResourceExhaustedError(absl::StrCat("the KV staging pool has ", free.size(),
                                                     " of ", capacity_, " blocks free, ", n,
                                                     " wanted"));
  }
  std::vector<int32_t> slots(free.rbegin(), free.rbegin() + n);
  free.resize(free.size() - static_cast<size_t>(n));
  return Lease(pool_, std::move(slots));
}

int KvStaging::freeSlots() const {
  std::lock_guard lock(pool_->mu);
  return static_cast<int>(pool_->free.size());
}

void* KvStaging::slotData(int32_t slot) const {
  TANDEM_CHECK(slot >= 0 && slot < capacity_);
  return static_cast<std::byte*>(data_) + static_cast<size_t>(slot) * block_bytes_;
}

void KvStaging::checkRange(const Lease& lease, int first, size_t n) const {
  TANDEM_CHECK(lease.pool_ == pool_ && "a lease of another pool");
  TANDEM_CHECK(first >= 0 && static_cast<size_t>(first) + n <= lease.slots_.size());
}

absl::Status KvStaging::download(std::span<const int32_t> block_ids, const Lease& lease,
                                 int first) {
  checkRange(lease, first, block_ids.size());
  std::lock_guard lock(stream_mu_);
  for (size_t i = 0; i < block_ids.size(); ++i) {
    stream_->copyToHost(slotData(lease.slots_[first + i]), runner_.blockData(block_ids[i]),
                        block_bytes_);
  }
  return stream_->synchronize();
}

absl::Status KvStaging::upload(const Lease& lease, int first,
                               std::span<const int32_t> block_ids) {
  checkRange(lease, first, block_ids.size());
  std::lock_guard lock(stream_mu_);
  for (size_t i = 0; i < block_ids.size(); ++i) {
    stream_->copyToDevice(runner_.blockData(block_ids[i]), slotData(lease.slots_[first + i]),
                          block_bytes_);
  }
  return stream_->synchronize();
}

}  // namespace tandem::engine
