// kernels::TransferStream: copies between a backend's device memory and host
// memory on a queue of their own, apart from the compute stream, so KV
// moving to and from other hosts overlaps the model's ops. On a GPU the
// host side should be pinned (Backend::allocatePinnedHost / pinHost) for
// the copies to run at DMA speed; pageable memory works, slower.
//
// One thread at a time drives a stream (its owner serializes); different
// streams of one backend may be used from different threads, and beside
// the thread issuing the backend's ops.
//
// Ordering against compute is the caller's: a copy reads or writes device
// memory as it is when the copy runs, so the ops that wrote a source (or
// still read a destination) must have finished, e.g. behind the engine
// step's synchronize().
#pragma once

#include <cstddef>
#include <memory>

#include "absl/status/status.h"

namespace tandem::kernels {

class TransferStream {
 public:
  virtual ~TransferStream() = default;

  // queue a copy of `bytes` from device memory to host memory, or back.
  // Both must stay valid and unchanged (the source) until synchronize()
  // returned.
  virtual void copyToHost(void* host_dst, const void* device_src, size_t bytes) = 0;
  virtual void copyToDevice(void* device_dst, const void* host_src, size_t bytes) = 0;

  // waits for every copy queued so far: OK, or Internal with the device's
  // message when one failed (the destination bytes are then undefined).
  virtual absl::Status synchronize() = 0;
};
using TransferStreamPtr = std::unique_ptr<TransferStream>;

}  // namespace tandem::kernels
