// Integer dot products of GGUF's block-quantized weights with activations
// quantized to 8 bits, the scheme of llama.cpp's MMVQ: decode GEMVs stream
// 4-6 bits a weight, and converting every weight to F32 would cost more
// instructions than the memory allows; four products at a time through
// gpu::dot4I8 (dp4a) keep a GEMV bound by bandwidth even at 8 rows of x.
//
// Activations: ActQ8 blocks of 32 values, x ~ d * q (quantize_act.h: llama.cpp's
// quantization, a scale per 32 or 256 values). The dot products below are exactly
// (up to the order of F32 sums) the products of the dequantized weights with
// x' = d * q, the activations' round trip; that is the kernels' contract and
// what the tests compare with.
//
// Each format is a traits type with a `Unit`: the part of a weight row one
// lane takes at a time (32 or 64 values: a block, or the values of a block
// that share packed bytes), loaded once (load) and multiplied with every row
// of x (dot):
//   kUnitValues                  values per unit;
//   load(row, u, unit)           unit u of a row of blocks;
//   dot(unit, acts, u) -> float  unit u times the same values of one row of
//                                activations (acts: the row's ActQ8 blocks).
#pragma once

#include <cstdint>

#include "common/quant_blocks.h"
#include "kernels/hip/gpu_vendor.h"

namespace tandem::gpu {

inline constexpr int kActValues = 32;

// 32 activations as 8-bit integers: x' = d * q; s = d * sum(q), the sum
// the offset formats (q4_0's -8, q4_k's mins) subtract.
struct ActQ8 {
  float d;
  float s;
  int32_t q[8];  // four int8 values an int, in order
};
static_assert(sizeof(ActQ8) == 40);

// four bytes at a 2-byte aligned address (q8_0, q4_0 and q6_k blocks are
// only 2-byte aligned) as an int.
__device__ __forceinline__ int loadInt2(const uint8_t* p) {
  const uint16_t* h = reinterpret_cast<const uint16_t*>(p);
  return static_cast<int>(static_cast<uint32_t>(h[0]) | (static_cast<uint32_t>(h[1]) << 16));
}

// bytewise v - 32 for bytes in [0, 63]: flipping bit 5 gives v - 32 for
// v >= 32 and v + 32 for the rest, whose bits 6 and 7 then make it v - 32
// mod 256 (no borrow crosses a byte).
__device__ __forceinline__ int minus32(int v) {
  const uint32_t x = static_cast<uint32_t>(v) ^ 0x20202020u;
  const uint32_t m = x & 0x20202020u;
  return static_cast<int>(x | (m << 1) | (m << 2));
}

// q8_0: a unit is a block; x = d * q.
struct DotQ8_0 {
  using Block = quant::BlockQ8_0;
  static constexpr int kValues = quant::kQK8_0;
  static constexpr int kUnitValues = 32;
  struct Unit {
    float d;
    int q[8];
  };
  static __device__ __forceinline__ void load(const Block* row, int64_t u, Unit& w) {
    const Block& b = row[u];
    w.d = halfBitsToFloat(b.d);
    const uint8_t* qs = reinterpret_cast<const uint8_t*>(b.qs);
    for (int i = 0; i < 8; ++i) w.q[i] = loadInt2(qs + 4 * i);
  }
  static __device__ __forceinline__ float dot(const Unit& w, const ActQ8* acts, int64_t u) {
    const ActQ8& a = acts[u];
    int s = 0;
    for (int i = 0; i < 8; ++i) s = dot4I8(w.q[i], a.q[i], s);
    return w.d * a.d * static_cast<float>(s);
  }
};

// q4_0: a unit is a block; x = d * (q - 8), values 0..15 in the low nibbles.
struct DotQ4_0 {
  using Block = quant::BlockQ4_0;
  static constexpr int kValues = quant::kQK4_0;
  static constexpr int kUnitValues = 32;
  struct Unit {
    float d;
    int q[4];
  };
  static __device__ __forceinline__ void load(const Block* row, int64_t u, Unit& w) {
    const Block& b = row[u];
    w.d = halfBitsToFloat(b.d);
    for (int i = 0; i < 4; ++i) w.q[i] = loadInt2(b.qs + 4 * i);
  }
  static __device__ __forceinline__ float dot(const Unit& w, const ActQ8* acts, int64_t u) {
    const ActQ8& a = acts[u];
    int s = 0;
    for (int i = 0; i < 4; ++i) {
      s = dot4I8(w.q[i] & 0x0F0F0F0F, a.q[i], s);
      s = dot4I8((w.q[i] >> 4) & 0x0F0F0F0F, a.q[4 + i], s);
    }
    return w.d * (a.d * static_cast<float>(s) - 8.0f * a.s);
  }
};

// q4_k: a unit is sub-blocks 2j and 2j + 1 of a block (64 values), the low
// and high nibbles of the same 32 bytes; x = d * sc * q - dmin * m.
struct DotQ4_K {
  using Block = quant::BlockQ4_K;
  static constexpr int kValues = quant::kQK_K;
  static constexpr int kUnitValues = 64;
  struct Unit {
    float d[2], m[2];  // d * sc and dmin * m of the two sub-blocks
    int q[8];
  };
  static __device__ __forceinline__ void scaleMin(int c, const uint8_t* s, int* sc, int* m) {
    if (c < 4) {
      *sc = s[c] & 63;
      *m = s[c + 4] & 63;
    } else {
      *sc = (s[c + 4] & 0xF) | ((s[c - 4] >> 6) << 4);
      *m = (s[c + 4] >> 4) | ((s[c] >> 6) << 4);
    }
  }
  static __device__ __forceinline__ void load(const Block* row, int64_t u, Unit& w) {
    const Block& b = row[u / 4];
    const int j = static_cast<int>(u % 4);
    const float d = halfBitsToFloat(b.d), dmin = halfBitsToFloat(b.dmin);
    for (int h = 0; h < 2; ++h) {
      int sc, m;
      scaleMin(2 * j + h, b.scales, &sc, &m);
      w.d[h] = d * static_cast<float>(sc);
      w.m[h] = dmin * static_cast<float>(m);
    }
    // blocks are 144 bytes and rows start at allocations: 4-byte aligned
    const int* qs = reinterpret_cast<const int*>(b.qs + 32 * j);
    for (int i = 0; i < 8; ++i) w.q[i] = qs[i];
  }
  static __device__ __forceinline__ float dot(const Unit& w, const ActQ8* acts, int64_t u) {
    const ActQ8& lo = acts[2 * u];
    const ActQ8& hi = acts[2 * u + 1];
    int s0 = 0, s1 = 0;
    for (int i = 0; i < 8; ++i) {
      s0 = dot4I8(w.q[i] & 0x0F0F0F0F, lo.q[i], s0);
      s1 = dot4I8((w.q[i] >> 4) & 0x0F0F0F0F, hi.q[i], s1);
    }
    return w.d[0] * lo.d * static_cast<float>(s0) - w.m[0] * lo.s +
           w.d[1] * hi.d * static_cast<float>(s1) - w.m[1] * hi.s;
  }
};

// q6_k: a unit is quarters t and t + 2 of half h of a block (64 values): the
// low and high nibbles of the same 32 ql bytes, and bits 2t and 2t + 4 of
// the half's 32 qh bytes; x = d * sc * (q - 32), a scale per 16 values.
struct DotQ6_K {
  using Block = quant::BlockQ6_K;
  static constexpr int kValues = quant::kQK_K;
  static constexpr int kUnitValues = 64;
  struct Unit {
    float d;
    int sc[4];  // quarter t's two scales, then quarter t + 2's
    int ql[8], qh[8];
  };
  static __device__ __forceinline__ void load(const Block* row, int64_t u, Unit& w) {
    const Block& b = row[u / 4];
    const int h = static_cast<int>(u % 4) / 2, t = static_cast<int>(u % 2);
    w.d = halfBitsToFloat(b.d);
    for (int i = 0; i < 2; ++i) {
      w.sc[i] = b.scales[8 * h + 2 * t + i];
      w.sc[2 + i] = b.scales[8 * h + 2 * (t + 2) + i];
    }
    for (int i = 0; i < 8; ++i) {
      w.ql[i] = loadInt2(b.ql + 64 * h + 32 * t + 4 * i);
      w.qh[i] = loadInt2(b.qh + 32 * h + 4 * i);
    }
  }
  static __device__ __forceinline__ float dot(const Unit& w, const ActQ8* acts, int64_t u) {
    // quarter c of half h holds values 128 h + 32 c .. + 32: activation
    // block 4 h + c of the weight block's eight
    const int64_t base = u / 4 * 8 + (u % 4) / 2 * 4 + u % 2;
    const int t = static_cast<int>(u % 2);
    float total = 0.0f;
    for (int part = 0; part < 2; ++part) {  // quarter t, then t + 2
      const ActQ8& a = acts[base + 2 * part];
      const int shift = 2 * (t + 2 * part);
      int s[2] = {0, 0};
      for (int i = 0; i < 8; ++i) {
        const int lo = part == 0 ? w.ql[i] & 0x0F0F0F0F : (w.ql[i] >> 4) & 0x0F0F0F0F;
        const int q = lo | (((w.qh[i] >> shift) & 0x03030303) << 4);
        s[i / 4] = dot4I8(minus32(q), a.q[i], s[i / 4]);
      }
      total += a.d * (static_cast<float>(w.sc[2 * part] * s[0]) +
                      static_cast<float>(w.sc[2 * part + 1] * s[1]));
    }
    return w.d * total;
  }
};

}  // namespace tandem::gpu

namespace tandem::kernels::hip {

// dispatches a kernel template on a quantized weight type's dot traits
// (hipErrorInvalidValue for the others).
#define TANDEM_DISPATCH_QUANT_DOT(dtype, Q, ...) \
  [&]() -> hipError_t {                          \
    switch (dtype) {                             \
      case ::tandem::DType::kQ8_0: {             \
        using Q = ::tandem::gpu::DotQ8_0;        \
        return __VA_ARGS__();                    \
      }                                          \
      case ::tandem::DType::kQ4_0: {             \
        using Q = ::tandem::gpu::DotQ4_0;        \
        return __VA_ARGS__();                    \
      }                                          \
      case ::tandem::DType::kQ4_K: {             \
        using Q = ::tandem::gpu::DotQ4_K;        \
        return __VA_ARGS__();                    \
      }                                          \
      case ::tandem::DType::kQ6_K: {             \
        using Q = ::tandem::gpu::DotQ6_K;        \
        return __VA_ARGS__();                    \
      }                                          \
      default:                                   \
        return hipErrorInvalidValue;             \
    }                                            \
  }()

}  // namespace tandem::kernels::hip
