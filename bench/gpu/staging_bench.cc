// The staging section of `tandem_gpu_check bench` (kernel_bench.h): a 4k-token
// prompt's KV blocks of the Llama-3-8B shape (32 layers, 8 kv heads of 128,
// F16, 16-token blocks: 256 blocks, 537 MB) gathered from a device cache
// into pinned host staging and scattered back (Backend::gatherBlocks /
// scatterBlocks: what a KV transfer and a tier spill do), beside one plain
// copy of the same bytes between pinned host memory and the device.
#include <algorithm>
#include <chrono>
#include <numeric>
#include <random>
#include <vector>

#include "bench/gpu/bench_timing.h"
#include "bench/gpu/check_tensors.h"
#include "bench/gpu/device_probe.h"
#include "bench/gpu/kernel_bench.h"
#include "common/status.h"

namespace tandem::bench::gpu {
namespace {

using Clock = std::chrono::steady_clock;

// median seconds of `repeats` runs of fn.
absl::StatusOr<double> medianOf(int repeats, const std::function<absl::Status()>& fn) {
  RETURN_IF_ERROR(fn());  // warm: first touches, lazy buffers
  std::vector<double> s;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    RETURN_IF_ERROR(fn());
    s.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(s.begin(), s.end());
  return s[s.size() / 2];
}

}  // namespace

absl::Status benchStaging(BenchContext& c, nlohmann::json* out) {
  const kvcache::KvLayout layout = c.small ? kvcache::KvLayout{2, 2, 32, 16, DType::kF16}
                                           : kvcache::KvLayout{32, 8, 128, 16, DType::kF16};
  const int blocks = c.small ? 8 : 4096 / 16;
  const int cache_blocks = 2 * blocks;
  const size_t bytes = layout.blockBytes() * static_cast<size_t>(blocks);
  ASSIGN_OR_RETURN(kernels::Tensor cache,
                   c.tensors.patterned(DType::kF16, 1,
                                       static_cast<int64_t>(layout.blockBytes() * cache_blocks / 2)));
  const kernels::KvCacheView view{cache.data, layout, cache_blocks};
  ASSIGN_OR_RETURN(kernels::BufferPtr staging, c.backend.allocatePinnedHost(bytes));
  std::vector<int32_t> ids(cache_blocks);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), std::mt19937(3));  // a serving cache's scatter
  ids.resize(blocks);
  ASSIGN_OR_RETURN(kernels::BufferPtr device_copy, c.backend.allocate(bytes));
  const int repeats = std::max(3, c.repeats);
  ASSIGN_OR_RETURN(const double gather, medianOf(repeats, [&] {
                     c.backend.gatherBlocks(view, ids, staging->data());
                     return c.backend.checkedSynchronize();
                   }));
  ASSIGN_OR_RETURN(const double scatter, medianOf(repeats, [&] {
                     c.backend.scatterBlocks(staging->data(), ids, view);
                     return c.backend.checkedSynchronize();
                   }));
  ASSIGN_OR_RETURN(const double d2h, medianOf(repeats, [&] {
                     return hostCopies(staging->data(), device_copy->data(), bytes, false, 1);
                   }));
  ASSIGN_OR_RETURN(const double h2d, medianOf(repeats, [&] {
                     return hostCopies(device_copy->data(), staging->data(), bytes, true, 1);
                   }));
  *out = {{"kv_bytes", bytes},
          {"blocks", blocks},
          {"block_bytes", layout.blockBytes()},
          {"gather_to_pinned_GBps", bytes / gather / 1e9},
          {"scatter_from_pinned_GBps", bytes / scatter / 1e9},
          {"copy_device_to_pinned_GBps", bytes / d2h / 1e9},
          {"copy_pinned_to_device_GBps", bytes / h2d / 1e9},
          {"gather_vs_copy", d2h / gather},
          {"scatter_vs_copy", h2d / scatter}};
  c.tensors.releaseDevice();
  return absl::OkStatus();
}

}  // namespace tandem::bench::gpu
