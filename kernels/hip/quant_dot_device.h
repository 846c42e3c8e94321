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
// Each format is a traits type with a `Unit`: the 32 values of a weight row
// one lane takes at a time (a block of q8_0 / q4_0; a k-quant block's
// values that share 16 packed bytes), loaded once (load) and multiplied with
// every row of x (dot):
//   kUnitValues                  values per unit (32);
//   load(row, u, unit)           unit u of a row of blocks;
//   dot(unit, acts, u) -> float  unit u times the same values of one row of
//                                activations (acts: the row's ActQ8 blocks).
#pragma once

#include <cstdint>

#include "common/quant_blocks.h"
#include "kernels/hip/gpu_vendor.h"
#include "kernels/hip/quant_device.h"

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

// the sum of four int8 values of v, through the dot unit (activation sums
// over half a block, which the offset formats subtract).
__device__ __forceinline__ int sum4I8(int v, int acc) { return dot4I8(0x01010101, v, acc); }

// q4_k: a unit is half (h) of the bytes sub-blocks 2j and 2j + 1 share: 16
// bytes whose low nibbles are values 16h.. of sub-block 2j and whose high
// nibbles are those of 2j + 1 (32 values; 8 units a block); x = d * sc * q -
// dmin * m.
struct DotQ4_K {
  using Block = quant::BlockQ4_K;
  static constexpr int kValues = quant::kQK_K;
  static constexpr int kUnitValues = 32;
  struct Unit {
    float d[2], m[2];  // d * sc and dmin * m of the two sub-blocks
    int q[4];
  };
  static __device__ __forceinline__ void load(const Block* row, int64_t u, Unit& w) {
    const Block& b = row[u / 8];
    const int j = static_cast<int>(u % 8) / 2, h = static_cast<int>(u % 2);
    // blocks are 144 bytes and rows start at allocations: d and dmin as one
    // word, the 12 scale bytes as three, the 16 quant bytes as one vector
    const uint32_t dm = *reinterpret_cast<const uint32_t*>(&b.d);
    const float d = halfBitsToFloat(static_cast<uint16_t>(dm & 0xffffu));
    const float dmin = halfBitsToFloat(static_cast<uint16_t>(dm >> 16));
    const uint32_t* sw = reinterpret_cast<const uint32_t*>(b.scales);
    const uint32_t s0 = sw[0], s1 = sw[1], s2 = sw[2];
    // byte i of the 12 by selects and shifts: indexing a local byte array
    // with a run-time index would put it in (slow) local memory
    auto byteAt = [&](int i) -> int {
      const uint32_t word = i < 4 ? s0 : i < 8 ? s1 : s2;
      return static_cast<int>((word >> (8 * (i % 4))) & 0xffu);
    };
    for (int s = 0; s < 2; ++s) {
      const int c = 2 * j + s;
      int sc, m;
      if (c < 4) {
        sc = byteAt(c) & 63;
        m = byteAt(c + 4) & 63;
      } else {
        sc = (byteAt(c + 4) & 0xF) | ((byteAt(c - 4) >> 6) << 4);
        m = (byteAt(c + 4) >> 4) | ((byteAt(c) >> 6) << 4);
      }
      w.d[s] = d * static_cast<float>(sc);
      w.m[s] = dmin * static_cast<float>(m);
    }
    const U32x4 q = *reinterpret_cast<const U32x4*>(b.qs + 32 * j + 16 * h);
    w.q[0] = static_cast<int>(q.x), w.q[1] = static_cast<int>(q.y);
    w.q[2] = static_cast<int>(q.z), w.q[3] = static_cast<int>(q.w);
  }
  static __device__ __forceinline__ float dot(const Unit& w, const ActQ8* acts, int64_t u) {
    const int j = static_cast<int>(u % 8) / 2, h = static_cast<int>(u % 2);
    const ActQ8& lo = acts[u / 8 * 8 + 2 * j];
    const ActQ8& hi = acts[u / 8 * 8 + 2 * j + 1];
    int s0 = 0, s1 = 0, x0 = 0, x1 = 0;
    for (int i = 0; i < 4; ++i) {
      s0 = dot4I8(w.q[i] & 0x0F0F0F0F, lo.q[4 * h + i], s0);
      s1 = dot4I8((w.q[i] >> 4) & 0x0F0F0F0F, hi.q[4 * h + i], s1);
      x0 = sum4I8(lo.q[4 * h + i], x0);
      x1 = sum4I8(hi.q[4 * h + i], x1);
    }
    return lo.d * (w.d[0] * static_cast<float>(s0) - w.m[0] * static_cast<float>(x0)) +
           hi.d * (w.d[1] * static_cast<float>(s1) - w.m[1] * static_cast<float>(x1));
  }
};

// q6_k: a unit is half (hl) of the 32 ql bytes quarters t and t + 2 of
// block half h share (low and high nibbles), with the matching half of the
// half's qh bytes (bits 2t and 2t + 4): 32 values, 8 units a block; x = d *
// sc * (q - 32), one scale for each quarter's 16 values here.
struct DotQ6_K {
  using Block = quant::BlockQ6_K;
  static constexpr int kValues = quant::kQK_K;
  static constexpr int kUnitValues = 32;
  struct Unit {
    float d;
    int sc[2];  // quarter t's scale, quarter t + 2's
    int ql[4], qh[4];
  };
  static __device__ __forceinline__ void load(const Block* row, int64_t u, Unit& w) {
    const Block& b = row[u / 8];
    const int r = static_cast<int>(u % 8);
    const int h = r / 4, t = (r / 2) % 2, hl = r % 2;
    w.d = halfBitsToFloat(b.d);
    w.sc[0] = b.scales[8 * h + 2 * t + hl];
    w.sc[1] = b.scales[8 * h + 2 * (t + 2) + hl];
    for (int i = 0; i < 4; ++i) {
      w.ql[i] = loadInt2(b.ql + 64 * h + 32 * t + 16 * hl + 4 * i);
      w.qh[i] = loadInt2(b.qh + 32 * h + 16 * hl + 4 * i);
    }
  }
  static __device__ __forceinline__ float dot(const Unit& w, const ActQ8* acts, int64_t u) {
    // quarter c of half h holds values 128 h + 32 c .. + 32: activation
    // block 4 h + c of the weight block's eight, ints 4 hl .. of it
    const int r = static_cast<int>(u % 8);
    const int h = r / 4, t = (r / 2) % 2, hl = r % 2;
    float total = 0.0f;
    for (int part = 0; part < 2; ++part) {  // quarter t, then t + 2
      const ActQ8& a = acts[u / 8 * 8 + 4 * h + t + 2 * part];
      const int shift = 2 * (t + 2 * part);
      int s = 0;
      for (int i = 0; i < 4; ++i) {
        const int lo = part == 0 ? w.ql[i] & 0x0F0F0F0F : (w.ql[i] >> 4) & 0x0F0F0F0F;
        const int q = lo | (((w.qh[i] >> shift) & 0x03030303) << 4);
        s = dot4I8(minus32(q), a.q[4 * hl + i], s);
      }
      total += a.d * static_cast<float>(w.sc[part] * s);
    }
    return w.d * total;
  }
};

}  // namespace tandem::gpu

namespace tandem::kernels::hip {

// dispatches a kernel template on a quantized weight type's dot traits
// (hipErrorInvalidValue for the others).
#define TANDEM_DISPATCH_QUANT_DOT(dtype, Q, ...) TANDEM_DISPATCH_QUANT_TRAITS(dtype, Dot, Q, __VA_ARGS__)

}  // namespace tandem::kernels::hip
