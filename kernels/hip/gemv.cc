#include "kernels/hip/gemv.h"

#include "kernels/hip/device_utils.h"

namespace tandem::kernels::hip {

namespace {

constexpr int kThreads = 256;

// lane group g of block b (groups of `lanes` threads) computes column
// n = b * (threads / lanes) + g for every row of x.
template <class W>
static __global__ void gemvKernel(const float* x, const W* w, const float* bias, float* y, int m,
                                  int64_t n, int64_t k, int lanes) {
  const int sub = threadIdx.x % lanes;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * (blockDim.x / lanes) + threadIdx.x / lanes;
  // the whole group leaves together: its shuffles stay among live lanes
  if (col >= n) return;
  float acc[kGemvMaxRows];
  for (int r = 0; r < kGemvMaxRows; ++r) acc[r] = 0.0f;
  const W* wr = w + col * k;
  for (int64_t j = sub; j < k; j += lanes) {
    const float wv = gpu::toFloat(wr[j]);
    for (int r = 0; r < m; ++r) acc[r] += x[r * k + j] * wv;
  }
  for (int r = 0; r < m; ++r) {
    const float total = gpu::groupSum(acc[r], lanes);
    if (sub == 0) y[r * n + col] = total + (bias != nullptr ? bias[col] : 0.0f);
  }
}

// lanes per column: about 16 elements of k each, a power of two from 4 to
// the wave size.
int lanesFor(int64_t k) {
  const int wave = gpu::hostWarpSize();
  int lanes = 4;
  while (lanes < wave && lanes * 16 < k) lanes *= 2;
  return lanes;
}

}  // namespace

hipError_t launchGemv(const float* x, const void* w, DType w_dtype, const float* bias, float* y,
                      int64_t m, int64_t n, int64_t k, hipStream_t stream) {
  if (m < 1 || m > kGemvMaxRows) return hipErrorInvalidValue;
  if (n == 0) return hipSuccess;
  const int lanes = lanesFor(k);
  const int64_t cols_per_block = kThreads / lanes;
  const dim3 grid(static_cast<unsigned>((n + cols_per_block - 1) / cols_per_block));
  return TANDEM_DISPATCH_ELEM(w_dtype, W, [&] {
    return gpu::launch("gemv", gemvKernel<W>, grid, dim3(kThreads), stream, x,
                       static_cast<const W*>(w), bias, y, static_cast<int>(m), n, k, lanes);
  });
}

}  // namespace tandem::kernels::hip
