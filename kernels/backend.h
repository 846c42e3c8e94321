// kernels::Backend: the ops of a Llama-family forward pass over device
// buffers. The model runner is written against this interface only, so the
// cpu backend, a hip backend and the host emulator are interchangeable.
//
// Conventions every implementation keeps:
//  - activations are F32; weights may be F32, F16 or BF16, and matmul
//    weights also GGUF block-quantized (q8_0, q4_0, q4_k, q6_k:
//    common/quant_blocks.h); the model binds quantized embedding tables and
//    norms as F32.
//  - all tensors are dense row-major 2-D views (kernels/tensor.h) into memory
//    of this backend: buffers from allocate()/importHost(), never foreign
//    pointers. Index tensors (token ids, positions, slots, block tables) are
//    I32 and live in device memory too; the caller uploads them once a step.
//  - ops are issued in order; results are visible to later ops and, after
//    synchronize(), to download(). The cpu backend runs each op to completion.
//  - shape or dtype mismatches are programming errors and abort
//    (TANDEM_CHECK); only allocation reports failure as a Status.
//  - out may alias an input only where the op says so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>
#include <string_view>

#include "absl/status/statusor.h"
#include "kernels/row_sampling.h"
#include "kernels/tensor.h"
#include "kernels/transfer_stream.h"
#include "kvcache/kv_layout.h"

namespace tandem::kernels {

// how rotary pairs are formed: rotate-half pairs (i, i + d/2) as HF stores
// q/k, or interleaved pairs (2i, 2i + 1) as llama.cpp's GGUF llama layout.
enum class RopeStyle : uint8_t { kHalf, kInterleaved };

struct RopeParams {
  RopeStyle style = RopeStyle::kHalf;
  int head_dim = 0;  // rotary dimension == head dimension
  float theta = 10000.0f;
  // llama3 frequency scaling (Llama 3.1+): off when llama3_scaling is false.
  bool llama3_scaling = false;
  float factor = 1.0f;
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  int original_max_position = 8192;
  // per-pair divisors of the inverse frequencies (llama.cpp's rope_freqs
  // tensor, as GGUF stores llama3 scaling); when set, they replace the
  // llama3 formula above. Empty = none.
  std::vector<float> freq_factors;
};

// a recorded sequence of ops (Backend::captureOps).
class OpGraph {
 public:
  virtual ~OpGraph() = default;
  // queues the recorded ops again, in order, on the same buffers; returns
  // at once like an op. Internal when the device refuses the launch.
  virtual absl::Status replay() = 0;
};
using OpGraphPtr = std::unique_ptr<OpGraph>;

// a KV storage: num_blocks blocks laid out as kvcache::KvLayout describes.
struct KvCacheView {
  void* data = nullptr;  // device address of block 0
  kvcache::KvLayout layout;
  int num_blocks = 0;
};

// which query rows of a batch belong to which sequence and where each
// sequence's keys and values are. Sequence s owns query rows
// [q_row, q_row + q_len) at positions [start_pos, start_pos + q_len); its
// keys are positions [0, start_pos + q_len), position p in block
// block_tables[table_offset + p / block_size], slot p % block_size.
// Prefill chunks have q_len > 1 (causal inside the chunk); decode has 1.
struct AttentionBatch {
  static constexpr int kSeqInfoCols = 4;  // q_row, q_len, start_pos, table_offset
  Tensor seq_info;      // [num_seqs, 4] I32
  Tensor block_tables;  // [1, total] I32
  int num_seqs = 0;
  int max_q_len = 0;    // host-side bounds, for launch shapes
  // at least the max over s of start_pos + q_len (a launch bound: the model
  // runner rounds decode steps' up to a bucket, see ModelRunner)
  int max_context = 0;
  int num_heads = 0;    // query heads; a multiple of layout.num_kv_heads
  float scale = 0.0f;   // usually 1 / sqrt(head_dim)
};

// the experts of one mixture-of-experts layer, each a SiLU-gated FFN,
// stacked: expert e's gate and up projections are rows [e * ffn, (e + 1) *
// ffn) of gate and up ([experts * ffn, hidden]), its down projection rows
// [e * hidden, (e + 1) * hidden) of down ([experts * hidden, ffn]). One
// dtype for the three (F32, F16, BF16 or quantized).
struct MoeExperts {
  Tensor gate, up, down;
  int num_experts = 0;
  int64_t ffn() const { return gate.rows / num_experts; }
  // expert e's slices
  Tensor gateOf(int e) const { return gate.rowRange(e * ffn(), ffn()); }
  Tensor upOf(int e) const { return up.rowRange(e * ffn(), ffn()); }
  Tensor downOf(int e) const { return down.rowRange(e * gate.cols, gate.cols); }
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string_view name() const = 0;

  // --- memory ---
  // a new uninitialised device buffer; ResourceExhausted when it cannot be had.
  virtual absl::StatusOr<BufferPtr> allocate(size_t bytes) = 0;
  // device memory holding `bytes` read-only bytes of host memory (weights).
  // The host memory must outlive the buffer: host backends alias it without
  // copying (the cpu backend may copy it onto huge pages instead:
  // CpuBackendOptions::weights); device backends copy it.
  virtual absl::StatusOr<BufferPtr> importHost(const void* host, size_t bytes) = 0;
  virtual void upload(void* device_dst, const void* host_src, size_t bytes) = 0;
  virtual void download(void* host_dst, const void* device_src, size_t bytes) = 0;
  // waits until every op issued so far has finished.
  virtual void synchronize() = 0;
  // bytes of weights handed to matmuls so far (each matmul counts its whole
  // weight, the experts' step the chosen experts' only): what a decode step
  // reads of the model, for benchmarks. 0 where a backend does not count.
  virtual uint64_t weightBytesRead() const { return 0; }

  // --- host staging (KV moving to other hosts and tiers) ---
  // host memory the device copies to and from at full speed (page-locked on
  // a GPU), freed by the buffer; its data() is a HOST address. Host
  // backends: plain aligned host memory. ResourceExhausted when it cannot be
  // had.
  virtual absl::StatusOr<BufferPtr> allocatePinnedHost(size_t bytes);
  // page-locks `bytes` of existing host memory at `host` (e.g. a shared
  // memory region) until the returned handle is destroyed; the memory must
  // outlive the handle. Host backends: nothing to do. Unavailable when the
  // runtime refuses (the memory still works, unpinned).
  virtual absl::StatusOr<BufferPtr> pinHost(void* host, size_t bytes);
  // a new stream for device <-> host copies apart from the compute stream
  // (kernels/transfer_stream.h). Host backends: copies run at once.
  // Unavailable when the device has no stream to give.
  virtual absl::StatusOr<TransferStreamPtr> createTransferStream();

  // --- graphs (a whole step as one launch) ---
  // records the ops `ops` issues, instead of running them, into a graph that
  // replays them as one launch on the same buffers (hipGraph / cudaGraph).
  // `ops` issues ops only (no upload, download or synchronize), and every
  // workspace they need must have grown in an earlier run of the same ops.
  // Unimplemented where the backend has none (cpu: its ops run at once).
  virtual absl::StatusOr<OpGraphPtr> captureOps(const std::function<void()>& ops);

  // --- ops ---
  // out[i, :] = table[ids[i], :] converted to F32. table [V, D] F32/F16/BF16,
  // ids [n, 1] I32 (each in [0, V)), out [n, D] F32.
  virtual void embedding(const Tensor& table, const Tensor& ids, const Tensor& out) = 0;

  // out[i, :] = x[i, :] / sqrt(mean(x[i, :]^2) + eps) * weight. x, out [R, D]
  // F32 (may alias), weight [1, D] F32/F16/BF16. Per-head norm (Qwen3 q/k
  // norm) is the same op on x reshaped to [tokens * heads, head_dim]. out
  // may also be of gemmInputType() when that is not F32 (then not aliasing
  // x): the F32 result rounded to it.
  virtual void rmsNorm(const Tensor& x, const Tensor& weight, float eps,
                       const Tensor& out) = 0;

  // y = x * w^T (+ bias). x [M, K] F32, w [N, K] F32/F16/BF16 or quantized
  // (K a multiple of the block), bias [1, N]
  // F32 or null, y [M, N] F32 (must not alias x). x may also be of
  // gemmInputType(M, w.dtype).
  virtual void matmul(const Tensor& x, const Tensor& w, const Tensor* bias,
                      const Tensor& y) = 0;

  // the type in which this backend wants x of an M-row matmul with weights
  // of `weight` type: F32 (the default, every CPU backend), or F16/BF16
  // where its GEMM runs on 16-bit operands (a GPU's matrix cores): the ops
  // that produce a GEMM's x (rmsNorm, addRmsNorm, siluMul) then write that
  // type, so the GEMM reads 2 bytes a value and no conversion runs between.
  virtual DType gemmInputType(int64_t rows, DType weight) const;

  // one weight of matmuls(): y = x * w^T (+ bias) as matmul() computes it.
  struct MatmulOutput {
    const Tensor* w;
    const Tensor* bias;  // or null
    const Tensor* y;
  };
  // matmul(x, *o.w, o.bias, *o.y) for each o of `outputs` (q, k and v;
  // gate and up), with the same numbers; a backend may run them as one job
  // (x prepared once, one wait for its threads). None of the y may alias x.
  virtual void matmuls(const Tensor& x, std::span<const MatmulOutput> outputs);

  // rotates x [T, heads * head_dim] F32 in place; token t at positions[t]
  // (positions [T, 1] I32).
  virtual void rope(const Tensor& x, const Tensor& positions, const RopeParams& params) = 0;

  // stores k and v ([T, kv_heads * head_dim] F32) of `layer` into cache
  // slots: token t goes to block slots[t] / block_size, slot
  // slots[t] % block_size (slots [T, 1] I32), converted to the cache dtype.
  virtual void writeKv(const Tensor& k, const Tensor& v, const Tensor& slots,
                       const KvCacheView& cache, int layer) = 0;

  // causal scaled-dot-product attention of q [T, num_heads * head_dim] F32
  // against the cached keys and values of `layer` (written by writeKv before
  // this call, for the batch's own tokens too). Query head h reads kv head
  // h / (num_heads / num_kv_heads). out [T, num_heads * head_dim] F32.
  virtual void pagedAttention(const Tensor& q, const KvCacheView& cache, int layer,
                              const AttentionBatch& batch, const Tensor& out) = 0;

  // out = silu(gate) * up, all [R, F] F32; out may alias either input. out
  // may also be of gemmInputType() when that is not F32 (no alias then).
  virtual void siluMul(const Tensor& gate, const Tensor& up, const Tensor& out) = 0;

  // out = a + b, all [R, D] F32; out may alias either input.
  virtual void add(const Tensor& a, const Tensor& b, const Tensor& out) = 0;

  // --- fused steps (a backend may run each as one launch; the default is
  // the ops it names, and an override gives the same bits) ---
  // add(x, delta, x) then rmsNorm(x, weight, eps, out): the residual stream
  // and the next block's norm. out may alias delta, not x; it may be of
  // gemmInputType() as rmsNorm's.
  virtual void addRmsNorm(const Tensor& x, const Tensor& delta, const Tensor& weight, float eps,
                          const Tensor& out);
  // rope(q, positions, params), rope(k, positions, params), then
  // writeKv(k, v, slots, cache, layer): a layer's new keys into the cache.
  virtual void ropeWriteKv(const Tensor& q, const Tensor& k, const Tensor& v,
                           const Tensor& positions, const RopeParams& params, const Tensor& slots,
                           const KvCacheView& cache, int layer);

  // --- mixtures of experts ---
  // the routing of each row t of logits [T, E] F32: the k = ids.cols
  // experts of largest softmax(logits[t]) probability, in descending order
  // of it (equal ones: the lower expert first), into ids [T, k] I32, and
  // their probabilities into weights [T, k] F32, divided by their sum when
  // `normalize` (Qwen3-MoE's norm_topk_prob; Mixtral always).
  virtual void moeRoute(const Tensor& logits, bool normalize, const Tensor& ids,
                        const Tensor& weights) = 0;
  // the mixture's FFN: out[t] = sum over j of weights[t, j] *
  // down_e(silu(gate_e(x[t])) * up_e(x[t])), e = ids[t, j], the terms added
  // in j order. x [T, hidden] F32, ids [T, k] I32 (each in [0, experts)),
  // weights [T, k] F32, out [T, hidden] F32 (must not alias x). Each
  // expert's rows of x go through its matmuls together, and only the
  // experts some row chose are read.
  virtual void moeExperts(const Tensor& x, const MoeExperts& experts, const Tensor& ids,
                          const Tensor& weights, const Tensor& out) = 0;

  // --- sampling where the logits are ---
  // greedy decoding's pick of each row of logits [R, V] F32: the first
  // maximum (a NaN never wins except in column 0, as std::max_element over
  // the row) into ids [R, 1] I32, and its log-probability under the row
  // (logit - log-sum-exp) into logprobs [R, 1] F32, so a decode step
  // downloads 8 bytes a row instead of V * 4. The default runs on the host
  // over the tensors' memory (host backends; sums in double, as the
  // engine's Sampler); a device backend overrides it (float sums: the
  // log-probability may differ in its last bits, the id never).
  virtual void greedyTokens(const Tensor& logits, const Tensor& ids, const Tensor& logprobs);
  // each row of logits [R, V] F32 sampled as rows[r] says (R entries):
  // ids [R, 1] I32 and logprobs [R, 1] F32 as greedyTokens (the
  // log-probability under the raw row). A device backend runs the whole
  // sampler there (kernels/row_sampling.h); the default takes plain greedy
  // rows only (greedyTokens): a host backend's engine samples its logits on
  // the host, with engine::Sampler.
  virtual void sampleTokens(const Tensor& logits, std::span<const RowSampling> rows,
                            const Tensor& ids, const Tensor& logprobs);

  // out[i, :] = x[rows[i], :]. x [T, D] F32, rows [n, 1] I32, out [n, D] F32.
  virtual void gatherRows(const Tensor& x, const Tensor& rows, const Tensor& out) = 0;

  // copies whole blocks: block src_ids[i] of src to block dst_ids[i] of dst
  // (same layout; storages may be the same when the id sets are disjoint).
  // Ids are host-side: they are transfer descriptors, not per-token data.
  virtual void copyBlocks(const KvCacheView& src, std::span<const int32_t> src_ids,
                          const KvCacheView& dst, std::span<const int32_t> dst_ids) = 0;

  // gathers blocks `ids` of cache into `staging` (ids.size() contiguous
  // blocks), e.g. before a transfer or a spill to a lower tier.
  void gatherBlocks(const KvCacheView& cache, std::span<const int32_t> ids, void* staging);
  // the inverse: scatters contiguous blocks in `staging` into blocks `ids`.
  void scatterBlocks(const void* staging, std::span<const int32_t> ids, const KvCacheView& cache);
};

}  // namespace tandem::kernels
