// Block layouts of GGUF's quantized weight types, byte for byte as ggml
// writes them (ggml-common.h), and the scalar reference that turns a row of
// blocks back into floats. Every quantized kernel (cpu, hip) is checked
// against dequantizeRow() followed by the F32 op.
//
//   q8_0: 32 values,  34 bytes: f16 d, int8 q[32];         x = d * q
//   q4_0: 32 values,  18 bytes: f16 d, u8 q[16] (nibbles); x = d * (q - 8)
//         value j (j < 16) is the low nibble of q[j], value j + 16 the high
//   q4_k: 256 values, 144 bytes: f16 d, f16 dmin, u8 scales[12], u8 q[128];
//         8 sub-blocks of 32 with 6-bit scale and min (scaleMinK4);
//         x = d * sc * q - dmin * m, q a 4-bit nibble
//   q6_k: 256 values, 210 bytes: u8 ql[128], u8 qh[64], i8 scales[16], f16 d;
//         16 sub-blocks of 16 with an 8-bit scale; x = d * sc * (q - 32),
//         q a 6-bit value (4 low bits in ql, 2 high in qh)
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/dtype.h"

namespace tandem::quant {

inline constexpr int kQK4_0 = 32;
inline constexpr int kQK8_0 = 32;
inline constexpr int kQK_K = 256;  // super-block of the k-quants

struct BlockQ8_0 {
  uint16_t d;  // f16
  int8_t qs[kQK8_0];
};
static_assert(sizeof(BlockQ8_0) == 34);

struct BlockQ4_0 {
  uint16_t d;  // f16
  uint8_t qs[kQK4_0 / 2];
};
static_assert(sizeof(BlockQ4_0) == 18);

struct BlockQ4_K {
  uint16_t d;     // f16, scale of the 6-bit scales
  uint16_t dmin;  // f16, scale of the 6-bit mins
  uint8_t scales[12];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ4_K) == 144);

struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;  // f16
};
static_assert(sizeof(BlockQ6_K) == 210);

// true for the block-quantized types above.
bool isQuantized(DType t);
// values per block (32 or 256); 1 for the dense types.
int blockValues(DType t);
// bytes per block; dtypeSize() for the dense types.
size_t blockBytes(DType t);

// how many consecutive activations share one 8-bit scale when a decode
// matmul with weights of quantized type `t` quantizes them, as llama.cpp's
// CPU does: 256 for the k-quants (block_q8_K), 32 for q8_0 and q4_0
// (block_q8_0).
inline int activationGroup(DType t) { return t == DType::kQ4_K || t == DType::kQ6_K ? 256 : 32; }

// q4_k's packing of sub-block j's (0..7) 6-bit scale and min.
inline void scaleMinK4(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// `n` values (a multiple of blockValues(t)) from the blocks at `src` into
// `dst`. t is any quantized type; the dense types are converted too.
void dequantizeRow(DType t, const void* src, float* dst, int64_t n);

}  // namespace tandem::quant
