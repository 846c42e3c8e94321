#include "kernels/hip/quantize_act.h"

#include "kernels/hip/device_utils.h"

namespace tandem::kernels::hip {

namespace {

constexpr int kThreads = 256;  // eight blocks of 32 values, or one group of 256

// thread i of the kernel holds value i of x; `group` consecutive threads
// share a scale (a 32-lane group, or the whole 256-thread block).
template <int kGroup>
static __global__ void quantizeActKernel(const float* x, int64_t blocks, gpu::ActQ8* out) {
  TANDEM_SHARED(float, scratch, [gpu::kMaxWarps]);
  const int64_t b = (static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x) / gpu::kActValues;
  const int i = threadIdx.x % gpu::kActValues;
  // 32-groups: the whole group leaves together (its shuffles stay among live
  // lanes); 256-groups: the grid is whole groups
  if (b >= blocks) return;
  const float v = x[b * gpu::kActValues + i];
  const float amax = kGroup == 32 ? gpu::groupMax(fabsf(v), gpu::kActValues)
                                  : gpu::blockMax(fabsf(v), scratch);
  float d = amax / 127.0f;
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  const int q = static_cast<int>(rintf(v * id));
  if (kGroup == 32) d = gpu::halfBitsToFloat(gpu::floatToHalfBits(d));
  // integers below 2^24: the float sum is exact in any order
  const float sum = gpu::groupSum(static_cast<float>(q), gpu::kActValues);
  gpu::ActQ8& a = out[b];
  reinterpret_cast<int8_t*>(a.q)[i] = static_cast<int8_t>(q);
  if (i == 0) {
    a.d = d;
    a.s = d * sum;
  }
}

}  // namespace

hipError_t launchQuantizeActQ8(const float* x, int64_t m, int64_t k, int group, gpu::ActQ8* out,
                               hipStream_t stream) {
  if ((group != 32 && group != 256) || k % group != 0) return hipErrorInvalidValue;
  const int64_t blocks = m * k / gpu::kActValues;
  if (blocks == 0) return hipSuccess;
  const int64_t per_block = kThreads / gpu::kActValues;
  const dim3 grid(static_cast<unsigned>((blocks + per_block - 1) / per_block));
  return group == 32 ? gpu::launch("quantize_act_q8", quantizeActKernel<32>, grid, dim3(kThreads),
                                   stream, x, blocks, out)
                     : gpu::launch("quantize_act_q8k", quantizeActKernel<256>, grid,
                                   dim3(kThreads), stream, x, blocks, out);
}

}  // namespace tandem::kernels::hip
