// Buffers of host memory, for the backends whose device is the host (cpu,
// reference): 64-byte aligned allocations, or aliases of caller memory.
#pragma once

#include <cstddef>

#include "absl/status/statusor.h"
#include "kernels/tensor.h"

namespace tandem::kernels {

class HostBuffer : public Buffer {
 public:
  // a fresh 64-byte aligned allocation; ResourceExhausted when malloc fails.
  static absl::StatusOr<BufferPtr> allocate(size_t bytes);
  // a buffer that aliases `data` without owning it.
  static BufferPtr alias(const void* data, size_t bytes);
  ~HostBuffer() override;

 private:
  HostBuffer(void* data, size_t bytes, bool owned) : Buffer(data, bytes), owned_(owned) {}
  bool owned_;
};

}  // namespace tandem::kernels
