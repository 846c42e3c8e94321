// KvStaging: how KV blocks leave and enter device memory when the engine's
// backend keeps G1 on a GPU. The KV transports read and write host bytes;
// this holds a bounded pool of block-sized slots in page-locked host memory
// and copies G1 blocks between the device and those slots on a transfer
// stream of its own (kernels::TransferStream), never on the compute stream.
//
//   P (prefill worker): lease = acquire(blocks to send)   // all or nothing
//                       download(computed block ids, lease, first)
//                       sender pushes slot(lease, i)'s bytes ... finish()
//                       lease goes: its slots return to the pool
//   D (decode worker):  lease = acquire(blocks to receive)
//                       receiver lands the blocks in lease.slots() (the
//                       pool's memory is its KV storage) and verifies them
//                       upload(lease, 0, G1 block ids); lease goes
//
// The pool is the only host memory staging takes: a transfer that cannot
// have its slots now is refused (ResourceExhausted) rather than queued, so
// a busy worker sheds load to the fallback (D prefills locally) instead of
// growing memory or blocking the threads that release slots.
//
// With the cpu backend G1 is host memory and nothing is staged (the
// transports read and write the KV storage itself).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/backend.h"
#include "kernels/transfer_stream.h"
#include "server/engine/model_runner.h"

namespace tandem::engine {

class KvStaging;
using KvStagingPtr = std::unique_ptr<KvStaging>;

class KvStaging {
 public:
  // host memory of at least `bytes` bytes for the slots (e.g. a shared
  // memory region a KV receiver exports); staging page-locks it through the
  // backend for as long as it lives. Empty = Backend::allocatePinnedHost.
  using HostMemoryFn = std::function<absl::StatusOr<void*>(size_t bytes)>;

  // slots the pool holds; returns them when destroyed. Move-only.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept = default;
    Lease& operator=(Lease&& other) noexcept;
    ~Lease() { reset(); }
    // the slot ids (indexes into the pool's memory), in transfer order.
    const std::vector<int32_t>& slots() const { return slots_; }
    int size() const { return static_cast<int>(slots_.size()); }
    // gives the slots back now (idempotent).
    void reset();

   private:
    friend class KvStaging;
    struct Pool;
    Lease(std::shared_ptr<Pool> pool, std::vector<int32_t> slots)
        : pool_(std::move(pool)), slots_(std::move(slots)) {}
    std::shared_ptr<Pool> pool_;
    std::vector<int32_t> slots_;
  };

  // a pool of `num_slots` slots of runner.kvLayout().blockBytes() bytes over
  // `runner`'s KV storage on `backend` (both must outlive it). Errors:
  // InvalidArgument for num_slots < 1; those of the host memory (allocation
  // or `host_memory`) and of Backend::createTransferStream. A backend that
  // cannot page-lock given memory leaves it pageable (slower, still correct)
  // and says so on stderr.
  static absl::StatusOr<KvStagingPtr> create(kernels::Backend& backend, const ModelRunner& runner,
                                             int num_slots, const HostMemoryFn& host_memory = {});
  // every lease should be gone; one that outlives the pool returns its slots
  // to nothing (harmless) but its slot memory is gone.
  ~KvStaging();

  // `n` slots now, all or nothing. ResourceExhausted when n exceeds the
  // pool (saying how to grow it) or fewer than n are free; InvalidArgument
  // for n < 1.
  absl::StatusOr<Lease> acquire(int n);

  // copies G1 blocks block_ids[i] into slot lease.slots()[first + i] and
  // waits: OK, or Internal when the device failed. The blocks' contents must
  // be final (the step that wrote them synchronized). Thread-safe.
  absl::Status download(std::span<const int32_t> block_ids, const Lease& lease, int first);
  // copies slot lease.slots()[first + i] into G1 block block_ids[i] and
  // waits; the blocks must not be in use by compute (D's blocks awaiting a
  // remote prefill are not). Thread-safe.
  absl::Status upload(const Lease& lease, int first, std::span<const int32_t> block_ids);

  // host address of slot `slot`: blockBytes() bytes.
  void* slotData(int32_t slot) const;
  // the whole pool: capacity() slots, slot s at data() + s * blockBytes().
  void* data() const { return data_; }
  size_t blockBytes() const { return block_bytes_; }
  int capacity() const { return capacity_; }
  int freeSlots() const;

 private:
  KvStaging(const ModelRunner& runner, size_t block_bytes, int capacity)
      : runner_(runner), block_bytes_(block_bytes), capacity_(capacity) {}
  // TANDEM_CHECKs that the lease holds [first, first + n) for this pool.
  void checkRange(const Lease& lease, int first, size_t n) const;

  const ModelRunner& runner_;
  const size_t block_bytes_;
  const int capacity_;
  kernels::BufferPtr owned_memory_;  // from allocatePinnedHost, or null
  kernels::BufferPtr pinned_;        // pinHost of given memory, or null
  void* data_ = nullptr;
  std::shared_ptr<Lease::Pool> pool_;
  std::mutex stream_mu_;  // one thread drives the transfer stream at a time
  kernels::TransferStreamPtr stream_;  // guarded by stream_mu_
};

}  // namespace tandem::engine
