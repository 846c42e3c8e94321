#include "kernels/hip/gemv_quant.h"

#include "kernels/hip/device_utils.h"
#include "kernels/hip/quant_device.h"

namespace tandem::kernels::hip {

namespace {

constexpr int kThreads = 256;
constexpr int kGroup = 8;  // values a lane dequantizes at once

// lane group g of block b (groups of `lanes` threads) computes column
// n = b * (threads / lanes) + g for every row of x; lane `sub` takes the
// groups of eight sub, sub + lanes, ... of the column's packed row, so
// neighbouring lanes read neighbouring bytes of one block.
template <class Q>
static __global__ void gemvQuantKernel(const float* x, const typename Q::Block* w,
                                       const float* bias, float* y, int m, int64_t n, int64_t k,
                                       int lanes) {
  const int sub = threadIdx.x % lanes;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * (blockDim.x / lanes) + threadIdx.x / lanes;
  // the whole group leaves together: its shuffles stay among live lanes
  if (col >= n) return;
  float acc[kGemvMaxRows];
  for (int r = 0; r < kGemvMaxRows; ++r) acc[r] = 0.0f;
  const typename Q::Block* wr = w + col * (k / Q::kValues);
  for (int64_t j = static_cast<int64_t>(sub) * kGroup; j < k;
       j += static_cast<int64_t>(lanes) * kGroup) {
    float wv[kGroup];
    gpu::dequantRow8<Q>(wr, j, wv);
    for (int r = 0; r < m; ++r) {
      const float* xr = x + r * k + j;
      float s = 0.0f;
      for (int i = 0; i < kGroup; ++i) s += xr[i] * wv[i];
      acc[r] += s;
    }
  }
  for (int r = 0; r < m; ++r) {
    const float total = gpu::groupSum(acc[r], lanes);
    if (sub == 0) y[r * n + col] = total + (bias != nullptr ? bias[col] : 0.0f);
  }
}

// lanes per column: about four groups of eight each, a power of two from 4
// to the wave size.
int lanesFor(int64_t k) {
  const int wave = gpu::hostWarpSize();
  int lanes = 4;
  while (lanes < wave && lanes * 4 * kGroup < k) lanes *= 2;
  return lanes;
}

}  // namespace

hipError_t launchGemvQuant(const float* x, const void* w, DType w_dtype, const float* bias,
                           float* y, int64_t m, int64_t n, int64_t k, hipStream_t stream) {
  if (m < 1 || m > kGemvMaxRows) return hipErrorInvalidValue;
  return TANDEM_DISPATCH_QUANT(w_dtype, Q, [&]() -> hipError_t {
    if (k % Q::kValues != 0) return hipErrorInvalidValue;
    if (n == 0) return hipSuccess;
    const int lanes = lanesFor(k);
    const int64_t cols_per_block = kThreads / lanes;
    const dim3 grid(static_cast<unsigned>((n + cols_per_block - 1) / cols_per_block));
    return gpu::launch("gemv_quant", gemvQuantKernel<Q>, grid, dim3(kThreads), stream, x,
                       static_cast<const typename Q::Block*>(w), bias, y, static_cast<int>(m), n, k,
                       lanes);
  });
}

}  // namespace tandem::kernels::hip
