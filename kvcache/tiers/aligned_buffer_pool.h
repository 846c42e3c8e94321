// A fixed set of equal staging buffers, each aligned to 4 KiB (O_DIRECT's
// alignment), in one allocation. The disk tier copies blocks through them and
// the io_uring engine registers them with the kernel once, so a read or write
// names a buffer by index. Which buffer is free is the owner's business.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <span>
#include <vector>

namespace tandem::kvcache {

class AlignedBufferPool {
 public:
  // `count` buffers of `bytes` each (bytes a multiple of 4096), zeroed.
  AlignedBufferPool(int count, size_t bytes);
  ~AlignedBufferPool();
  AlignedBufferPool(const AlignedBufferPool&) = delete;
  AlignedBufferPool& operator=(const AlignedBufferPool&) = delete;

  int count() const { return count_; }
  size_t bufferBytes() const { return bytes_; }
  std::span<std::byte> buffer(int i) const;
  // one iovec per buffer, for io_uring_register_buffers.
  std::vector<iovec> iovecs() const;

 private:
  int count_;
  size_t bytes_;
  std::byte* base_;
};

}  // namespace tandem::kvcache
