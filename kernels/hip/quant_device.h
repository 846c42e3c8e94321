// Device-side dequantization of GGUF's block types, mirroring the scalar
// reference in common/quant_blocks.{h,cc} (whose plain block structs the
// kernels read directly). Every format is read eight values at a time:
// eight consecutive values of a block always share one scale (q4_k's and
// q8_0's sub-blocks are 32 values, q6_k's 16), so a kernel's lane or tile
// loader calls dequant8() once per eight weights and accumulates in F32.
//
// Each format is a traits type (QuantQ8_0, QuantQ4_0, QuantQ4_K, QuantQ6_K):
//   Block            the block struct of common/quant_blocks.h;
//   kValues          values per block (32 or 256);
//   dequant8(b, j0, out)  values j0 .. j0 + 7 of block b (j0 % 8 == 0).
// TANDEM_DISPATCH_QUANT picks the traits for a DType at run time.
#pragma once

#include <cstdint>

#include "common/dtype.h"
#include "common/quant_blocks.h"
#include "kernels/hip/gpu_vendor.h"

namespace tandem::gpu {

// x = d * q
struct QuantQ8_0 {
  using Block = quant::BlockQ8_0;
  static constexpr int kValues = quant::kQK8_0;
  static __device__ __forceinline__ void dequant8(const Block& b, int j0, float* out) {
    const float d = halfBitsToFloat(b.d);
    for (int i = 0; i < 8; ++i) out[i] = d * b.qs[j0 + i];
  }
};

// x = d * (q - 8); value j < 16 is the low nibble of qs[j], j + 16 the high.
struct QuantQ4_0 {
  using Block = quant::BlockQ4_0;
  static constexpr int kValues = quant::kQK4_0;
  static __device__ __forceinline__ void dequant8(const Block& b, int j0, float* out) {
    const float d = halfBitsToFloat(b.d);
    const int half = kValues / 2;
    const int shift = j0 < half ? 0 : 4;
    const uint8_t* q = b.qs + (j0 % half);
    for (int i = 0; i < 8; ++i) out[i] = d * (((q[i] >> shift) & 0xF) - 8);
  }
};

// q4_k's packing of sub-block j's (0..7) 6-bit scale and min, as
// quant::scaleMinK4 (a host function).
__device__ __forceinline__ void scaleMinK4(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// 8 sub-blocks of 32: sub-block c's values are the low (c even) or high
// (c odd) nibbles of qs[32 * (c / 2) ..]; x = (d * sc) * q - dmin * m.
struct QuantQ4_K {
  using Block = quant::BlockQ4_K;
  static constexpr int kValues = quant::kQK_K;
  static __device__ __forceinline__ void dequant8(const Block& b, int j0, float* out) {
    const int c = j0 / 32, l0 = j0 % 32;
    int sc, m;
    scaleMinK4(c, b.scales, &sc, &m);
    const float d1 = halfBitsToFloat(b.d) * sc;
    const float m1 = halfBitsToFloat(b.dmin) * m;
    const int shift = 4 * (c % 2);
    const uint8_t* q = b.qs + 32 * (c / 2) + l0;
    for (int i = 0; i < 8; ++i) out[i] = d1 * ((q[i] >> shift) & 0xF) - m1;
  }
};

// two halves of 128; in half h, quarter c (0..3) of 32 values takes the low
// (c < 2) or high nibbles of ql[64 h + 32 (c % 2) ..] and bits 2c..2c+1 of
// qh[32 h ..]; scale scales[8 h + 2 c + l / 16]. x = d * sc * (q - 32).
struct QuantQ6_K {
  using Block = quant::BlockQ6_K;
  static constexpr int kValues = quant::kQK_K;
  static __device__ __forceinline__ void dequant8(const Block& b, int j0, float* out) {
    const int h = j0 / 128, c = (j0 % 128) / 32, l0 = j0 % 32;
    const float d = halfBitsToFloat(b.d) * b.scales[8 * h + 2 * c + l0 / 16];
    const uint8_t* ql = b.ql + 64 * h + 32 * (c % 2) + l0;
    const uint8_t* qh = b.qh + 32 * h + l0;
    const int lshift = 4 * (c / 2), hshift = 2 * c;
    for (int i = 0; i < 8; ++i) {
      const int q = ((ql[i] >> lshift) & 0xF) | (((qh[i] >> hshift) & 3) << 4);
      out[i] = d * (q - 32);
    }
  }
};

// values k0 .. k0 + 7 (k0 % 8 == 0) of a row of Q blocks at `row`.
template <class Q>
__device__ __forceinline__ void dequantRow8(const typename Q::Block* row, int64_t k0, float* out) {
  Q::dequant8(row[k0 / Q::kValues], static_cast<int>(k0 % Q::kValues), out);
}

}  // namespace tandem::gpu

namespace tandem::kernels::hip {

// dispatches a kernel template on a quantized weight type: Q is
// ::tandem::gpu::<Traits><type> for Q8_0, Q4_0, Q4_K and Q6_K
// (hipErrorInvalidValue for the others). The dequantizing traits are Quant,
// the dot-product ones (quant_dot_device.h) Dot.
#define TANDEM_DISPATCH_QUANT_TRAITS(dtype, Traits, Q, ...) \
  [&]() -> hipError_t {                                   \
    switch (dtype) {                                      \
      case ::tandem::DType::kQ8_0: {                      \
        using Q = ::tandem::gpu::Traits##Q8_0;            \
        return __VA_ARGS__();                             \
      }                                                   \
      case ::tandem::DType::kQ4_0: {                      \
        using Q = ::tandem::gpu::Traits##Q4_0;            \
        return __VA_ARGS__();                             \
      }                                                   \
      case ::tandem::DType::kQ4_K: {                      \
        using Q = ::tandem::gpu::Traits##Q4_K;            \
        return __VA_ARGS__();                             \
      }                                                   \
      case ::tandem::DType::kQ6_K: {                      \
        using Q = ::tandem::gpu::Traits##Q6_K;            \
        return __VA_ARGS__();                             \
      }                                                   \
      default:                                            \
        return hipErrorInvalidValue;                      \
    }                                                     \
  }()
#define TANDEM_DISPATCH_QUANT(dtype, Q, ...) TANDEM_DISPATCH_QUANT_TRAITS(dtype, Quant, Q, __VA_ARGS__)

}  // namespace tandem::kernels::hip
