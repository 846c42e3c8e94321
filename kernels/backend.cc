#include "kernels/backend.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "common/status.h"
#include "kernels/host_buffer.h"

namespace tandem::kernels {

namespace {

// the transfer stream of a backend whose device is the host: plain copies.
class HostTransferStream final : public TransferStream {
 public:
  // TransferStream
  void copyToHost(void* host_dst, const void* device_src, size_t bytes) override {
    std::memcpy(host_dst, device_src, bytes);
  }
  void copyToDevice(void* device_dst, const void* host_src, size_t bytes) override {
    std::memcpy(device_dst, host_src, bytes);
  }
  absl::Status synchronize() override { return absl::OkStatus(); }
};

// staging memory seen as a storage of ids.size() consecutive blocks.
KvCacheView stagingView(const void* staging, const KvCacheView& cache, size_t n) {
  return KvCacheView{const_cast<void*>(staging), cache.layout, static_cast<int>(n)};
}

}  // namespace

void Backend::addRmsNorm(const Tensor& x, const Tensor& delta, const Tensor& weight, float eps,
                         const Tensor& out) {
  add(x, delta, x);
  rmsNorm(x, weight, eps, out);
}

void Backend::ropeWriteKv(const Tensor& q, const Tensor& k, const Tensor& v,
                          const Tensor& positions, const RopeParams& params, const Tensor& slots,
                          const KvCacheView& cache, int layer) {
  rope(q, positions, params);
  rope(k, positions, params);
  writeKv(k, v, slots, cache, layer);
}

void Backend::sampleTokens(const Tensor& logits, std::span<const RowSampling> rows,
                           const Tensor& ids, const Tensor& logprobs) {
  TANDEM_CHECK(static_cast<int64_t>(rows.size()) == logits.rows);
  for (const RowSampling& row : rows) {
    TANDEM_CHECK(row.plainGreedy() && "a host backend samples in the engine");
  }
  greedyTokens(logits, ids, logprobs);
}

void Backend::greedyTokens(const Tensor& logits, const Tensor& ids, const Tensor& logprobs) {
  for (int64_t r = 0; r < logits.rows; ++r) {
    const float* row = logits.as<float>() + r * logits.cols;
    const float* best = std::max_element(row, row + logits.cols);
    double sum = 0.0;
    for (int64_t j = 0; j < logits.cols; ++j) sum += std::exp(static_cast<double>(row[j]) - *best);
    // as the Sampler rounds it: the logit minus max + log(sum)
    const double lse = *best + std::log(sum);
    ids.as<int32_t>()[r] = static_cast<int32_t>(best - row);
    logprobs.as<float>()[r] = static_cast<float>(*best - lse);
  }
}

DType Backend::gemmInputType(int64_t, DType) const { return DType::kF32; }

void Backend::matmuls(const Tensor& x, std::span<const MatmulOutput> outputs) {
  for (const MatmulOutput& o : outputs) matmul(x, *o.w, o.bias, *o.y);
}

absl::StatusOr<BufferPtr> Backend::allocatePinnedHost(size_t bytes) {
  return HostBuffer::allocate(bytes);
}

absl::StatusOr<BufferPtr> Backend::pinHost(void* host, size_t bytes) {
  return HostBuffer::alias(host, bytes);
}

absl::StatusOr<OpGraphPtr> Backend::captureOps(const std::function<void()>&) {
  return absl::UnimplementedError(std::string(name()) + " backend: no graphs");
}

absl::StatusOr<TransferStreamPtr> Backend::createTransferStream() {
  return TransferStreamPtr(new HostTransferStream());
}

void Backend::gatherBlocks(const KvCacheView& cache, std::span<const int32_t> ids,
                           void* staging) {
  std::vector<int32_t> seq(ids.size());
  std::iota(seq.begin(), seq.end(), 0);
  copyBlocks(cache, ids, stagingView(staging, cache, ids.size()), seq);
}

void Backend::scatterBlocks(const void* staging, std::span<const int32_t> ids,
                            const KvCacheView& cache) {
  std::vector<int32_t> seq(ids.size());
  std::iota(seq.begin(), seq.end(), 0);
  copyBlocks(stagingView(staging, cache, ids.size()), seq, cache, ids);
}

}  // namespace tandem::kernels
