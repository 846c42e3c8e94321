#include "kernels/hip/silu_mul.h"

#include "kernels/hip/device_utils.h"

namespace tandem::kernels::hip {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;

// grid-stride; each element read once and written once.
template <class O>
static __global__ void siluMulKernel(const float* gate, const float* up, int64_t n, O* out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    const float g = gate[i];
    gpu::fromFloat(g / (1.0f + expf(-g)) * up[i], out + i);
  }
}

}  // namespace

hipError_t launchSiluMul(const float* gate, const float* up, int64_t n, void* out, DType out_dtype,
                         hipStream_t stream) {
  if (n == 0) return hipSuccess;
  int64_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  return TANDEM_DISPATCH_ELEM(out_dtype, O, [&] {
    return gpu::launch("silu_mul", siluMulKernel<O>, dim3(static_cast<unsigned>(blocks)),
                       dim3(kThreads), stream, gate, up, n, static_cast<O*>(out));
  });
}

}  // namespace tandem::kernels::hip
