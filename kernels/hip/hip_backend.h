// The hip backend: kernels::Backend over GPU memory, driving the kernels of
// kernels/hip on one compute stream. Built three ways from the same source:
// against ROCm (tandem_hip), against the CUDA runtime through gpu_vendor.h,
// and against the host emulator (tandem_hip_emu), which is how CI runs it.
//
// Memory: buffers come from a caching pool (freed blocks are kept by size
// class and reused in stream order); importHost copies. Ops are queued on
// the compute stream and return at once; KV block copies run on a transfer
// stream ordered against it with events, so tier traffic can overlap
// compute. upload() and download() wait for the stream.
//
// The header names no vendor type (streams and events are opaque handles),
// so code built by any C++ compiler can include it and link either build.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.h"

namespace tandem::kernels::hip {

class HipBackend;
using HipBackendPtr = std::unique_ptr<HipBackend>;
class VendorBlas;

struct HipBackendOptions {
  // matmuls of more than kGemvMaxRows rows through the vendor's BLAS
  // (gpu_blas.h) when it loads; false: tandem's own tiled GEMM always.
  bool vendor_blas = true;
  // positions a decode-attention block scores (a multiple of 32 up to
  // kDecodeMaxPartition); 0: chosen per batch to fill the device
  // (attention_decode.h). Tests pin it to cover long contexts cheaply.
  int decode_partition = 0;
};

class HipBackend : public Backend {
 public:
  // the runtime's hipStream_t / hipEvent_t / hipGraph_t ..., opaque here
  using Handle = void*;

  // the backend on device `device` (0-based, as the runtime numbers them).
  // Unavailable when the runtime finds no device (its message and the
  // device count in the error) or no stream can be had; InvalidArgument when
  // `device` is not below the device count.
  static absl::StatusOr<HipBackendPtr> create(int device = 0, HipBackendOptions options = {});
  // every buffer of this backend must be gone first.
  ~HipBackend() override;

  // waits for every queued op; the error of the first kernel that failed
  // since the last call (Internal, with the device's message), else OK.
  absl::Status checkedSynchronize();
  // pinned host memory (hipHostMalloc) for staging tier offloads
  // (gatherBlocks/scatterBlocks accept it as `staging`) and KV transfers;
  // freed by the returned buffer.
  absl::StatusOr<BufferPtr> allocatePinnedHost(size_t bytes) override;
  // hipHostRegister until the handle goes (hipHostUnregister).
  absl::StatusOr<BufferPtr> pinHost(void* host, size_t bytes) override;
  // a stream of its own (not transfer_, which copyBlocks orders against the
  // compute stream with events from the engine's thread).
  absl::StatusOr<TransferStreamPtr> createTransferStream() override;
  // the compute stream captured (hipStreamBeginCapture, relaxed: the pool
  // may still allocate) into a hipGraph; the emulator records alike.
  // Internal when the runtime refuses the capture. The graph keeps the
  // backend's pointer: the backend must outlive it.
  absl::StatusOr<OpGraphPtr> captureOps(const std::function<void()>& ops) override;
  // the device this backend runs on (as the runtime numbers them).
  int device() const { return device_; }
  // device bytes held by the pool for reuse (not in any live buffer).
  size_t pooledBytes() const { return pooled_bytes_; }
  // what computes matmuls of more than kGemvMaxRows rows: the vendor BLAS's
  // name, or "tandem tiled GEMM (<why the BLAS is not used>)".
  const std::string& gemmPath() const { return gemm_path_; }


  // the vendor BLAS alone: y [m, n] F32 = x [m, k] * w [n, k]^T with x and w
  // of one type (F32, F16, BF16), no conversion (benchmarks' peer).
  // Unavailable without a vendor BLAS.
  absl::Status vendorGemm(const Tensor& x, const Tensor& w, const Tensor& y);

  // Backend
  std::string_view name() const override { return "hip"; }
  absl::StatusOr<BufferPtr> allocate(size_t bytes) override;
  absl::StatusOr<BufferPtr> importHost(const void* host, size_t bytes) override;
  void upload(void* device_dst, const void* host_src, size_t bytes) override;
  void download(void* host_dst, const void* device_src, size_t bytes) override;
  // aborts with the device's message when a kernel failed (a kernel bug).
  void synchronize() override;
  void embedding(const Tensor& table, const Tensor& ids, const Tensor& out) override;
  void rmsNorm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) override;
  void matmul(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y) override;
  DType gemmInputType(int64_t rows, DType weight) const override;
  // x quantized (decode rows, quantized weights) or rounded to 16 bits (the
  // BLAS) once for all outputs.
  void matmuls(const Tensor& x, std::span<const MatmulOutput> outputs) override;
  void rope(const Tensor& x, const Tensor& positions, const RopeParams& params) override;
  void writeKv(const Tensor& k, const Tensor& v, const Tensor& slots, const KvCacheView& cache,
               int layer) override;
  void pagedAttention(const Tensor& q, const KvCacheView& cache, int layer,
                      const AttentionBatch& batch, const Tensor& out) override;
  void siluMul(const Tensor& gate, const Tensor& up, const Tensor& out) override;
  void add(const Tensor& a, const Tensor& b, const Tensor& out) override;
  // one launch each (rms_norm.h, rope.h)
  void addRmsNorm(const Tensor& x, const Tensor& delta, const Tensor& weight, float eps,
                  const Tensor& out) override;
  void ropeWriteKv(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& positions,
                   const RopeParams& params, const Tensor& slots, const KvCacheView& cache,
                   int layer) override;
  // hip_backend_moe.cc
  void moeRoute(const Tensor& logits, bool normalize, const Tensor& ids,
                const Tensor& weights) override;
  void moeExperts(const Tensor& x, const MoeExperts& experts, const Tensor& ids,
                  const Tensor& weights, const Tensor& out) override;
  void greedyTokens(const Tensor& logits, const Tensor& ids, const Tensor& logprobs) override;
  void sampleTokens(const Tensor& logits, std::span<const RowSampling> rows, const Tensor& ids,
                    const Tensor& logprobs) override;
  void gatherRows(const Tensor& x, const Tensor& rows, const Tensor& out) override;
  void copyBlocks(const KvCacheView& src, std::span<const int32_t> src_ids, const KvCacheView& dst,
                  std::span<const int32_t> dst_ids) override;

 private:
  class PooledBuffer;
  friend class PooledBuffer;
  class Graph;
  friend class Graph;


  HipBackend(int device, Handle stream, Handle transfer, Handle compute_done,
             Handle transfer_done);

  // x as the matmuls of one matmuls() call share it: its 8-bit blocks (the
  // quantized gemvs) and its 16-bit copy (the BLAS), each made once.
  struct SharedX {
    const void* acts_q8 = nullptr;
    int acts_group = 0;  // the activation group acts_q8 was made with
    DType x16_type = DType::kF32;
    const void* x16 = nullptr;
  };
  void matmulShared(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y,
                    SharedX* shared);
  // the routes: decode rows (gemv), or prefill through the BLAS
  void gemvRows(const Tensor& x, const Tensor& w, const float* bias, const Tensor& y,
                SharedX* shared);
  // F32, F16 or BF16: what an op's out may be.
  static bool isActivationType(DType t);
  // the 16-bit type the vendor BLAS multiplies weights of `weight` in (F32
  // weights: F32; quantized ones are dequantized to F16).
  static DType blasOperand(DType weight);
  void blasRows(const Tensor& x, const Tensor& w, const float* bias, const Tensor& y,
                SharedX* shared);

  // makes device_ the calling thread's current device (the runtime's is per
  // thread; the engine loop is not the thread that created the backend).
  void bind() const;
  // a device allocation of at least `bytes` (rounded to its size class).
  absl::StatusOr<void*> take(size_t bytes, size_t* rounded);
  void give(void* ptr, size_t rounded);
  // a device scratch area of `bytes`, grown (never shrunk) on demand, at
  // least doubling: graphs (captureOps) keep the addresses they captured,
  // so an outgrown area is retired (kept until the backend goes), at most
  // one per doubling, never freed for reuse.
  void* scratch(BufferPtr& slot, size_t bytes);
  const float* inverseFrequencies(const RopeParams& params);

  int device_;
  Handle stream_;
  Handle transfer_;
  Handle compute_done_;
  Handle transfer_done_;
  std::multimap<size_t, void*> pool_;  // size class -> free device blocks
  size_t pooled_bytes_ = 0;
  int live_buffers_ = 0;
  BufferPtr decode_workspace_;
  std::vector<BufferPtr> retired_scratch_;
  BufferPtr act_workspace_;     // quantized activations (gemv_quant.h)
  BufferPtr blas_activations_;  // x rounded to the weights' 16-bit type
  BufferPtr blas_weights_;      // quantized weights dequantized to F16
  std::unique_ptr<VendorBlas> blas_;
  std::string gemm_path_;
  int decode_partition_ = 0;
  BufferPtr moe_groups_;   // moeExperts' grouping by expert (moe_route.h)
  BufferPtr moe_buffers_;  // its gate, up and down outputs
  BufferPtr moe_acts_;     // its quantized activations
  BufferPtr copy_pairs_;
  // sampleTokens: its inputs (params, token lists, masks) packed in one
  // upload, the penalized rows, and the per-token marks (kept zero between
  // calls)
  BufferPtr sample_inputs_;
  BufferPtr sample_work_;
  BufferPtr sample_marks_;
  std::vector<unsigned char> sample_inputs_host_;
  std::vector<int32_t> copy_pairs_host_;
  struct RopeTable {
    std::vector<float> inv;  // host copy: the key, and the source of the upload
    BufferPtr device;
  };
  std::vector<RopeTable> rope_tables_;
};

}  // namespace tandem::kernels::hip
