#include "kvcache/tiers/aligned_buffer_pool.h"

#include <sys/mman.h>

#include "common/status.h"

namespace tandem::kvcache {

AlignedBufferPool::AlignedBufferPool(int count, size_t bytes) : count_(count), bytes_(bytes) {
  TANDEM_CHECK(count > 0 && bytes > 0 && bytes % 4096 == 0);
  // anonymous pages: page-aligned and zeroed by the kernel.
  void* p = mmap(nullptr, static_cast<size_t>(count) * bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  TANDEM_CHECK(p != MAP_FAILED);
  base_ = static_cast<std::byte*>(p);
}

AlignedBufferPool::~AlignedBufferPool() { munmap(base_, static_cast<size_t>(count_) * bytes_); }

std::span<std::byte> AlignedBufferPool::buffer(int i) const {
  TANDEM_CHECK(i >= 0 && i < count_);
  return {base_ + static_cast<size_t>(i) * bytes_, bytes_};
}

std::vector<iovec> AlignedBufferPool::iovecs() const {
  std::vector<iovec> v(count_);
  for (int i = 0; i < count_; ++i) v[i] = {base_ + static_cast<size_t>(i) * bytes_, bytes_};
  return v;
}

}  // namespace tandem::kvcache
