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

}  // namespace

hipError_t launchResidualAdd(const float* a, const float* b, int64_t n, float* out,
                             hipStream_t stream) {
  if (n == 0) return hipSuccess;
  int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  return gpu::launch("residual_add", residualAddKernel, dim3(static_cast<unsigned>(blocks)),
                     dim3(kThreads), stream, a, b, n, out);
}

}  // namespace tandem::kernels::hip
