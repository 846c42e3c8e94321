// Host memory for a model's weights on transparent huge pages. Decode streams
// every weight once a step; from 4 KiB pages of the mapped file each page is a
// TLB miss and a page walk under the stream (batch-1 decode 5-15% faster from 2
// MiB pages on an Intel Xeon: model_runner_bench --threads 2 against
// TANDEM_CPU_WEIGHTS=mapped, bench/RESULTS.md "the whole table on the Intel
// Xeon with AMX"). The cpu backend copies imported weights here where the
// kernel hands out huge pages (CpuBackendOptions::weights).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>

#include "absl/status/statusor.h"
#include "kernels/tensor.h"

namespace tandem::kernels::cpu {

// whether madvise(MADV_HUGEPAGE) can give this process huge pages: the
// kernel's transparent_hugepage setting is "always" or "madvise" (false
// where the setting cannot be read).
bool transparentHugePagesAvailable();

// Chunks of 2 MiB-aligned memory advised MADV_HUGEPAGE, handed out from
// 64-byte boundaries in the order asked (weights are loaded once, so
// nothing is freed before the last buffer of its chunk). Thread-safe.
class WeightArena {
 public:
  // a copy of `bytes` bytes of `host` in the arena; the buffer keeps its
  // chunk alive. ResourceExhausted when the memory cannot be had.
  absl::StatusOr<BufferPtr> copyIn(const void* host, size_t bytes);

  // bytes of the chunks allocated so far.
  size_t reservedBytes() const;

 private:
  struct Chunk;
  mutable std::mutex mu_;
  std::shared_ptr<Chunk> current_;
  size_t chunk_bytes_ = 0;  // size of current_
  size_t used_ = 0;        // bytes handed out of current_
  size_t reserved_ = 0;
};

}  // namespace tandem::kernels::cpu
