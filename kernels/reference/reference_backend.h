// The reference backend: every op as the plainest scalar loop, in double
// where accumulation order would otherwise matter. It is slow on purpose;
// tests compare the other backends against it.
#pragma once

#include "kernels/backend.h"

namespace tandem::kernels {

class ReferenceBackend : public Backend {
 public:
  std::string_view name() const override { return "reference"; }

  // pagedAttention as a matrix unit computes it on 16-bit operands (the
  // hip backend's prefill on F16/BF16 caches, attention_prefill_mma.h):
  // q * scale and the probabilities rounded to `dtype`, the caches' own
  // type; kF32 (the default): exact.
  void roundAttentionOperandsTo(DType dtype) { attention_operands_ = dtype; }

  absl::StatusOr<BufferPtr> allocate(size_t bytes) override;
  absl::StatusOr<BufferPtr> importHost(const void* host, size_t bytes) override;
  void upload(void* device_dst, const void* host_src, size_t bytes) override;
  void download(void* host_dst, const void* device_src, size_t bytes) override;
  void synchronize() override {}

  void embedding(const Tensor& table, const Tensor& ids, const Tensor& out) override;
  void rmsNorm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) override;
  void matmul(const Tensor& x, const Tensor& w, const Tensor* bias, const Tensor& y) override;
  void rope(const Tensor& x, const Tensor& positions, const RopeParams& params) override;
  void writeKv(const Tensor& k, const Tensor& v, const Tensor& slots, const KvCacheView& cache,
               int layer) override;
  void pagedAttention(const Tensor& q, const KvCacheView& cache, int layer,
                      const AttentionBatch& batch, const Tensor& out) override;
  void siluMul(const Tensor& gate, const Tensor& up, const Tensor& out) override;
  void add(const Tensor& a, const Tensor& b, const Tensor& out) override;
  void moeRoute(const Tensor& logits, bool normalize, const Tensor& ids,
                const Tensor& weights) override;
  // each (token, choice) through its expert's reference matmuls alone
  void moeExperts(const Tensor& x, const MoeExperts& experts, const Tensor& ids,
                  const Tensor& weights, const Tensor& out) override;
  void gatherRows(const Tensor& x, const Tensor& rows, const Tensor& out) override;
  void copyBlocks(const KvCacheView& src, std::span<const int32_t> src_ids, const KvCacheView& dst,
                  std::span<const int32_t> dst_ids) override;

 private:
  DType attention_operands_ = DType::kF32;
};

// element i of a tensor of any float dtype, as F32.
float loadElement(const void* data, DType dtype, size_t i);
// stores v as element i of a tensor of any float dtype (rounding to nearest).
void storeElement(void* data, DType dtype, size_t i, float v);

}  // namespace tandem::kernels
