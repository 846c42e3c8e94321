// Device helpers shared by the kernels: element types of weights and KV
// caches, conversions that round exactly as common/dtype.h does on the host,
// and warp/block reductions that sum in a fixed order (so results do not
// depend on scheduling).
#pragma once

#include "kernels/hip/gpu_vendor.h"

namespace tandem::gpu {

// 16-bit storage types: raw bits, converted in registers.
struct F16 {
  uint16_t bits;
};
struct BF16 {
  uint16_t bits;
};

__device__ __forceinline__ float toFloat(float v) { return v; }
__device__ __forceinline__ float toFloat(F16 v) { return halfBitsToFloat(v.bits); }
__device__ __forceinline__ float toFloat(BF16 v) { return bf16BitsToFloat(v.bits); }

// round to nearest even, as tandem::f32ToF16.
__device__ __forceinline__ uint16_t floatToHalfBits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const int32_t exp = static_cast<int32_t>((u >> 23) & 0xff) - 127 + 15;
  uint32_t mant = u & 0x7fffffu;
  if (((u >> 23) & 0xff) == 0xff)
    return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    const uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) ++half;
  return static_cast<uint16_t>(half);
}

// round to nearest even, as tandem::f32ToBf16; NaN stays NaN.
__device__ __forceinline__ uint16_t floatToBf16Bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

__device__ __forceinline__ void fromFloat(float v, float* out) { *out = v; }
__device__ __forceinline__ void fromFloat(float v, F16* out) { out->bits = floatToHalfBits(v); }
__device__ __forceinline__ void fromFloat(float v, BF16* out) { out->bits = floatToBf16Bits(v); }

__device__ __forceinline__ float warpSum(float v) {
  for (int offset = warpSize / 2; offset > 0; offset >>= 1) v += TANDEM_SHFL_XOR(v, offset);
  return v;
}

// the sum over aligned groups of `width` lanes (a power of two <= warpSize).
__device__ __forceinline__ float groupSum(float v, int width) {
  for (int offset = width / 2; offset > 0; offset >>= 1)
    v += TANDEM_SHFL_XOR_WIDTH(v, offset, width);
  return v;
}

// the maximum over aligned groups of `width` lanes (a power of two <= warpSize).
__device__ __forceinline__ float groupMax(float v, int width) {
  for (int offset = width / 2; offset > 0; offset >>= 1)
    v = fmaxf(v, TANDEM_SHFL_XOR_WIDTH(v, offset, width));
  return v;
}

__device__ __forceinline__ float warpMax(float v) {
  for (int offset = warpSize / 2; offset > 0; offset >>= 1)
    v = fmaxf(v, TANDEM_SHFL_XOR(v, offset));
  return v;
}

// the sum of v over a 1-D block; every thread calls it and gets the sum.
// scratch: a shared float[kMaxWarps]; free again when this returns.
template <class Scratch>
__device__ __forceinline__ float blockSum(float v, Scratch scratch) {
  v = warpSum(v);
  if (threadIdx.x % warpSize == 0) scratch[threadIdx.x / warpSize] = v;
  __syncthreads();
  const int warps = (blockDim.x + warpSize - 1) / warpSize;
  float total = 0.0f;
  for (int w = 0; w < warps; ++w) total += scratch[w];
  __syncthreads();
  return total;
}

template <class Scratch>
__device__ __forceinline__ float blockMax(float v, Scratch scratch) {
  v = warpMax(v);
  if (threadIdx.x % warpSize == 0) scratch[threadIdx.x / warpSize] = v;
  __syncthreads();
  const int warps = (blockDim.x + warpSize - 1) / warpSize;
  float best = -INFINITY;
  for (int w = 0; w < warps; ++w) best = fmaxf(best, scratch[w]);
  __syncthreads();
  return best;
}

}  // namespace tandem::gpu

namespace tandem::kernels::hip {

// dispatches a kernel template on a weight/cache element type.
#define TANDEM_DISPATCH_ELEM(dtype, T, ...) \
  [&]() -> hipError_t {                     \
    switch (dtype) {                        \
      case ::tandem::DType::kF32: {         \
        using T = float;                    \
        return __VA_ARGS__();               \
      }                                     \
      case ::tandem::DType::kF16: {         \
        using T = ::tandem::gpu::F16;       \
        return __VA_ARGS__();               \
      }                                     \
      case ::tandem::DType::kBF16: {        \
        using T = ::tandem::gpu::BF16;      \
        return __VA_ARGS__();               \
      }                                     \
      default:                              \
        return hipErrorInvalidValue;        \
    }                                       \
  }()

}  // namespace tandem::kernels::hip
