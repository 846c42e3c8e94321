#include "kernels/cpu/weight_arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"

namespace tandem::kernels::cpu {

namespace {

constexpr size_t kHugePage = size_t{2} << 20;
// a chunk holds many tensors (a small one rounded up to its own 2 MiB
// would waste most of it); a tensor larger than this gets a chunk of its
// own size.
constexpr size_t kChunkBytes = size_t{64} << 20;
constexpr size_t kAlign = 64;

}  // namespace

bool transparentHugePagesAvailable() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string setting;
  if (!std::getline(in, setting)) return false;
  // the active choice is bracketed: "always [madvise] never"
  return setting.find("[always]") != std::string::npos || setting.find("[madvise]") != std::string::npos;
}

struct WeightArena::Chunk {
  explicit Chunk(void* p) : data(static_cast<char*>(p)) {}
  ~Chunk() { std::free(data); }
  Chunk(const Chunk&) = delete;
  Chunk& operator=(const Chunk&) = delete;
  char* data;
};

namespace {

// a buffer inside a chunk, keeping the chunk alive.
class ArenaBuffer : public Buffer {
 public:
  ArenaBuffer(void* data, size_t bytes, std::shared_ptr<const void> chunk)
      : Buffer(data, bytes), chunk_(std::move(chunk)) {}

 private:
  std::shared_ptr<const void> chunk_;
};

}  // namespace

absl::StatusOr<BufferPtr> WeightArena::copyIn(const void* host, size_t bytes) {
  const size_t need = (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
  std::shared_ptr<Chunk> chunk;
  char* at = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (current_ == nullptr || used_ + need > chunk_bytes_) {
      const size_t size = std::max(kChunkBytes, (need + kHugePage - 1) / kHugePage * kHugePage);
      void* p = std::aligned_alloc(kHugePage, size);
      if (p == nullptr) {
        return absl::ResourceExhaustedError(absl::StrCat("cannot allocate ", size, " bytes of host memory for weights"));
      }
      // advice only: without huge pages the copy still works, on 4 KiB pages
      ::madvise(p, size, MADV_HUGEPAGE);
      current_ = std::make_shared<Chunk>(p);
      chunk_bytes_ = size;
      used_ = 0;
      reserved_ += size;
    }
    chunk = current_;
    at = chunk->data + used_;
    used_ += need;
  }
  std::memcpy(at, host, bytes);
  return BufferPtr(new ArenaBuffer(at, bytes, std::shared_ptr<const void>(chunk, chunk->data)));
}

size_t WeightArena::reservedBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reserved_;
}

}  // namespace tandem::kernels::cpu
