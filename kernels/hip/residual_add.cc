#include "kernels/hip/residual_add.h"

#include "kernels/hip/device_utils.h"

namespace tandem::kernels::hip {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;

static __global__ void residualAddKernel(const float* a, const float* b, int64_t n, float* out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    out[i] = a[i] + b[i];
  }
}

static __global__ void addBiasKernel(float* y, const float* bias, int64_t total, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += stride) {
    y[i] += bias[i % n];
  }
}

dim3 gridFor(int64_t n) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  return dim3(static_cast<unsigned>(blocks));
}

}  // namespace

hipError_t launchAddBias(float* y, const float* bias, int64_t m, int64_t n, hipStream_t stream) {
  if (m == 0 || n == 0) return hipSuccess;
  return gpu::launch("add_bias", addBiasKernel, gridFor(m * n), dim3(kThreads), stream, y, bias,
                     m * n, n);
}

hipError_t launchResidualAdd(const float* a, const float* b, int64_t n, float* out,
                             hipStream_t stream) {
  if (n == 0) return hipSuccess;
  return gpu::launch("residual_add", residualAddKernel, gridFor(n), dim3(kThreads), stream, a, b,
                     n, out);
}

}  // namespace tandem::kernels::hip
