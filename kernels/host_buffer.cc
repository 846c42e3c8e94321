#include "kernels/host_buffer.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace tandem::kernels {

absl::StatusOr<BufferPtr> HostBuffer::allocate(size_t bytes) {
  // aligned_alloc wants a multiple of the alignment; a zero-byte buffer still
  // gets a valid distinct pointer.
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;
  void* p = std::aligned_alloc(64, rounded);
  if (p == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat("cannot allocate ", bytes, " bytes of host memory"));
  }
  return BufferPtr(new HostBuffer(p, bytes, true));
}

BufferPtr HostBuffer::alias(const void* data, size_t bytes) {
  return BufferPtr(new HostBuffer(const_cast<void*>(data), bytes, false));
}

HostBuffer::~HostBuffer() {
  if (owned_) std::free(data_);
}

}  // namespace tandem::kernels
