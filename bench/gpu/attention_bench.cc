// The attention sections of `tandem_gpu_check bench` (kernel_bench.h).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "bench/gpu/bench_timing.h"
#include "bench/gpu/check_tensors.h"
#include "bench/gpu/kernel_bench.h"
#include "common/status.h"

namespace tandem::bench::gpu {
namespace {

using kernels::AttentionBatch;
using kernels::KvCacheView;
using kernels::Tensor;

struct Heads {
  int q, kv, dim;
};

Heads headsFor(bool small) { return small ? Heads{4, 2, 32} : Heads{32, 8, 128}; }

// the batch of `seqs` sequences, each `q_len` new rows after `ctx - q_len`
// cached positions, its blocks `tables` (blocks_per_seq a sequence).
absl::StatusOr<AttentionBatch> batchOf(CheckTensors& t, int seqs, int ctx, int q_len,
                                       const std::vector<int32_t>& tables, int blocks_per_seq,
                                       int q_heads, int dim) {
  std::vector<int32_t> info;
  for (int s = 0; s < seqs; ++s) info.insert(info.end(), {s * q_len, q_len, ctx - q_len, s * blocks_per_seq});
  AttentionBatch b;
  b.num_seqs = seqs;
  b.max_q_len = q_len;
  b.max_context = ctx;
  b.num_heads = q_heads;
  b.scale = 1.0f / std::sqrt(static_cast<float>(dim));
  ASSIGN_OR_RETURN(b.seq_info, t.toDevice(t.ints(info).reshaped(seqs, 4)));
  ASSIGN_OR_RETURN(b.block_tables,
                   t.toDevice(t.ints(tables).reshaped(1, static_cast<int64_t>(tables.size()))));
  return b;
}

absl::StatusOr<Timing> timeAttention(BenchContext& c, const KvCacheView& view,
                                     const AttentionBatch& batch, int64_t rows, int64_t cols,
                                     int iters) {
  ASSIGN_OR_RETURN(Tensor q, c.tensors.patterned(DType::kF32, rows, cols));
  ASSIGN_OR_RETURN(Tensor o, c.tensors.patterned(DType::kF32, rows, cols));
  return timeOps(c.backend, c.repeats, iters, [&](int) {
    c.backend.pagedAttention(q, view, 0, batch, o);
    return absl::OkStatus();
  });
}

}  // namespace

absl::Status benchAttentionDecode(BenchContext& c, nlohmann::json* out) {
  const Heads h = headsFor(c.small);
  constexpr int kBlock = 16;
  const std::vector<int> seq_counts = c.small ? std::vector<int>{2} : std::vector<int>{1, 8, 32, 64};
  const std::vector<int> contexts =
      c.small ? std::vector<int>{64, 300} : std::vector<int>{1024, 4096, 32768};
  const int max_blocks = seq_counts.back() * ((contexts.back() + kBlock - 1) / kBlock);
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    const kvcache::KvLayout paged{1, h.kv, h.dim, kBlock, dtype};
    // one cache for every case (the largest needs 8.6 GB at 64 x 32k)
    ASSIGN_OR_RETURN(Tensor cache,
                     c.tensors.patterned(dtype, 1,
                                         static_cast<int64_t>(paged.blockBytes() * max_blocks /
                                                              dtypeSize(dtype))));
    std::vector<int32_t> ids(max_blocks);
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), std::mt19937(7));  // a serving cache's scatter
    for (int seqs : seq_counts) {
      for (int ctx : contexts) {
        const int per_seq = (ctx + kBlock - 1) / kBlock;
        const std::vector<int32_t> tables(ids.begin(), ids.begin() + seqs * per_seq);
        ASSIGN_OR_RETURN(AttentionBatch batch,
                         batchOf(c.tensors, seqs, ctx, 1, tables, per_seq, h.q, h.dim));
        const KvCacheView view{cache.data, paged, max_blocks};
        const int iters = c.small ? 1 : 20;
        ASSIGN_OR_RETURN(Timing t, timeAttention(c, view, batch, seqs,
                                                 static_cast<int64_t>(h.q) * h.dim, iters));
        // the same kernel on a contiguous cache: one block a sequence
        std::vector<int32_t> own(seqs);
        std::iota(own.begin(), own.end(), 0);
        ASSIGN_OR_RETURN(AttentionBatch cbatch,
                         batchOf(c.tensors, seqs, ctx, 1, own, 1, h.q, h.dim));
        const KvCacheView cview{cache.data, kvcache::KvLayout{1, h.kv, h.dim, ctx, dtype}, seqs};
        ASSIGN_OR_RETURN(Timing ct, timeAttention(c, cview, cbatch, seqs,
                                                  static_cast<int64_t>(h.q) * h.dim, iters));
        const double bytes = 2.0 * seqs * ctx * h.kv * h.dim * dtypeSize(dtype);
        nlohmann::json e = entry("attention_decode_" + std::string(dtypeName(dtype)) + "_" +
                                     std::to_string(seqs) + "seqs_ctx" + std::to_string(ctx),
                                 t, bytes / t.median_s / 1e9, "GB/s (kv read)");
        e["fraction_of_copy_bandwidth"] = bytes / t.median_s / c.copy_bandwidth;
        e["contiguous_kv_median_s"] = ct.median_s;
        e["heads"] = h.q;
        e["kv_heads"] = h.kv;
        e["head_dim"] = h.dim;
        e["block_size"] = kBlock;
        out->push_back(e);
      }
    }
    c.tensors.releaseDevice();
  }
  return absl::OkStatus();
}

absl::Status benchAttentionPrefill(BenchContext& c, nlohmann::json* out) {
  const Heads h = headsFor(c.small);
  constexpr int kBlock = 16;
  const DType dtype = DType::kF16;
  for (int tokens : c.small ? std::vector<int>{48} : std::vector<int>{1024, 4096, 16384}) {
    const kvcache::KvLayout layout{1, h.kv, h.dim, kBlock, dtype};
    const int blocks = (tokens + kBlock - 1) / kBlock;
    ASSIGN_OR_RETURN(Tensor cache,
                     c.tensors.patterned(dtype, 1,
                                         static_cast<int64_t>(layout.blockBytes() * blocks /
                                                              dtypeSize(dtype))));
    std::vector<int32_t> tables(blocks);
    std::iota(tables.begin(), tables.end(), 0);
    ASSIGN_OR_RETURN(AttentionBatch batch,
                     batchOf(c.tensors, 1, tokens, tokens, tables, blocks, h.q, h.dim));
    const int iters = c.small || tokens >= 16384 ? 1 : tokens >= 4096 ? 2 : 5;
    ASSIGN_OR_RETURN(Timing t, timeAttention(c, KvCacheView{cache.data, layout, blocks}, batch,
                                             tokens, static_cast<int64_t>(h.q) * h.dim, iters));
    const double flops = 4.0 * h.q * h.dim * static_cast<double>(tokens) * tokens / 2;
    nlohmann::json e = entry("attention_prefill_" + std::string(dtypeName(dtype)) + "_" +
                                 std::to_string(tokens),
                             t, flops / t.median_s / 1e12, "TFLOP/s (causal)");
    if (c.peak_tflops > 0) e["fraction_of_peak"] = flops / t.median_s / 1e12 / c.peak_tflops;
    out->push_back(e);
    c.tensors.releaseDevice();
  }
  return absl::OkStatus();
}

}  // namespace tandem::bench::gpu
