// The cpu backend: the ops of kernels::Backend on host memory, vectorized
// with the best instruction set the processor has (chosen at run time) and
// spread over a persistent thread pool. Every op runs to completion before
// it returns, so synchronize() is free.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "kernels/backend.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/quant_matmul.h"
#include "kernels/cpu/simd_level.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/cpu/weight_arena.h"

namespace tandem::kernels::cpu {

struct CpuBackendOptions {
  // threads that run ops, the caller included; 0 means one per hardware
  // thread. 1 runs everything on the calling thread.
  int num_threads = 0;
  // the instruction set to use; unset means the best one detected, or
  // TANDEM_CPU_SIMD (scalar|avx2|avx512) when that is set. Tests force lower
  // levels to cover every path.
  std::optional<SimdLevel> simd_level;
  // whether prefill matmuls may run on AMX tiles where the processor has
  // them (amx_matmul.h) at the avx512 level; tests turn it off to reach the
  // AVX-512 kernels those matmuls would otherwise take.
  bool amx = true;
  // where imported weights live: kHugePages copies them into memory on
  // transparent huge pages (weight_arena.h) where the kernel gives them
  // out, else they stay where the caller has them (kMapped: a mapped
  // file's pages, shared with every process that maps it, at the cost of a
  // TLB miss a 4 KiB page in decode). TANDEM_CPU_WEIGHTS=mapped|huge
  // overrides the default.
  enum class Weights { kHugePages, kMapped };
  std::optional<Weights> weights;
};

class CpuBackend;
using CpuBackendPtr = std::unique_ptr<CpuBackend>;

class CpuBackend : public Backend {
 public:
  // InvalidArgument when the requested level is not supported here or the
  // thread count is negative.
  static absl::StatusOr<CpuBackendPtr> create(const CpuBackendOptions& options = {});

  SimdLevel simdLevel() const { return kernels_.level; }
  int numThreads() const { return pool_.size(); }

  // Backend
  std::string_view name() const override { return "cpu"; }
  absl::StatusOr<BufferPtr> allocate(size_t bytes) override;
  absl::StatusOr<BufferPtr> importHost(const void* host, size_t bytes) override;
  void upload(void* device_dst, const void* host_src, size_t bytes) override;
  void download(void* host_dst, const void* device_src, size_t bytes) override;
  void synchronize() override {}
  void embedding(const Tensor& table, const Tensor& ids, const Tensor& out) override;
  void rmsNorm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) override;
  void matmul(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y) override;
  void matmuls(const Tensor& x, std::span<const MatmulOutput> outputs) override;
  void rope(const Tensor& x, const Tensor& positions, const RopeParams& params) override;
  void writeKv(const Tensor& k, const Tensor& v, const Tensor& slots, const KvCacheView& cache,
               int layer) override;
  void pagedAttention(const Tensor& q, const KvCacheView& cache, int layer,
                      const AttentionBatch& batch, const Tensor& out) override;
  void siluMul(const Tensor& gate, const Tensor& up, const Tensor& out) override;
  void add(const Tensor& a, const Tensor& b, const Tensor& out) override;
  void moeRoute(const Tensor& logits, bool normalize, const Tensor& ids,
                const Tensor& weights) override;
  // cpu_moe.cc: the choices grouped by expert on the host, each phase
  // (gate and up of every chosen expert, then down) one job on the pool
  // whose tasks are ranges of the chosen experts' weight rows.
  void moeExperts(const Tensor& x, const MoeExperts& experts, const Tensor& ids,
                  const Tensor& weights, const Tensor& out) override;
  void gatherRows(const Tensor& x, const Tensor& rows, const Tensor& out) override;
  uint64_t weightBytesRead() const override { return weight_bytes_read_.load(std::memory_order_relaxed); }
  void copyBlocks(const KvCacheView& src, std::span<const int32_t> src_ids, const KvCacheView& dst,
                  std::span<const int32_t> dst_ids) override;

 private:
  // one issuing thread; read by benchmarks between steps
  void countWeight(const Tensor& w) { weight_bytes_read_.fetch_add(w.bytes(), std::memory_order_relaxed); }

  CpuBackend(const KernelTable& kernels, int num_threads, bool amx, bool copy_weights)
      : kernels_(kernels), amx_(amx && kernels.level == SimdLevel::kAvx512), pool_(num_threads) {
    if (copy_weights) weight_arena_ = std::make_unique<WeightArena>();
  }

  // runs fn(begin, end) over [0, n) in about num_threads * 4 pieces of at
  // least `grain` items; inline when there is only one piece.
  template <class Fn>
  void parallelRanges(int64_t n, int64_t grain, Fn&& fn);

  // quantMatmul's tasks on the pool (inline when there is one).
  ParallelTasks poolTasks();
  // y of every args (each its own x) as one job of weight-row ranges; a
  // quantized weight reads its x from xq[i] (quantized by `dots`).
  void expertMatmuls(std::span<const MatmulArgs> args, const QuantDotTable* dots,
                     std::span<const void* const> xq);
  // moeExperts' workspace: at least `bytes`, 64-byte aligned, kept
  std::byte* moeScratch(size_t bytes);

  const KernelTable& kernels_;
  // prefill may go to the AMX tiles (options.amx, at the avx512 level)
  const bool amx_;
  // imported weights are copied here; null: they are aliased
  std::unique_ptr<WeightArena> weight_arena_;
  BufferPtr moe_scratch_;
  ThreadPool pool_;
  std::atomic<uint64_t> weight_bytes_read_{0};
};

}  // namespace tandem::kernels::cpu
