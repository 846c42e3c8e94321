#include "kernels/hip/quantize_act.h"

#include "kernels/hip/device_utils.h"

namespace tandem::kernels::hip {

namespace {

constexpr int kThreads = 256;  // eight blocks of 32 values

// each aligned group of 32 lanes quantizes one block (on a wave of 64, two).
static __global__ void quantizeActKernel(const float* x, int64_t blocks, gpu::ActQ8* out) {
  const int64_t b = (static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x) / gpu::kActValues;
  const int i = threadIdx.x % gpu::kActValues;
  // the whole group leaves together: its shuffles stay among live lanes
  if (b >= blocks) return;
  const float v = x[b * gpu::kActValues + i];
  const float amax = gpu::groupMax(fabsf(v), gpu::kActValues);
  const float d = amax / 127.0f;
  const int q = d > 0.0f ? static_cast<int>(roundf(v / d)) : 0;
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

hipError_t launchQuantizeActQ8(const float* x, int64_t m, int64_t k, gpu::ActQ8* out,
                               hipStream_t stream) {
  if (k % gpu::kActValues != 0) return hipErrorInvalidValue;
  const int64_t blocks = m * k / gpu::kActValues;
  if (blocks == 0) return hipSuccess;
  const int64_t per_block = kThreads / gpu::kActValues;
  const dim3 grid(static_cast<unsigned>((blocks + per_block - 1) / per_block));
  return gpu::launch("quantize_act_q8", quantizeActKernel, grid, dim3(kThreads), stream, x, blocks,
                     out);
}

}  // namespace tandem::kernels::hip
