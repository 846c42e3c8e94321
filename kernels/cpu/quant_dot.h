// Dot products of a quantized weight row with an activation row quantized
// to 8 bits, as llama.cpp computes them: the activation is quantized once
// per matmul call (32-value blocks for q8_0/q4_0 weights, 256-value blocks
// with per-16 sums for the k-quants) and every weight block is multiplied in
// integers, scaled once per block. One table per instruction set
// (quant_dot_scalar.cc, quant_dot_avx2.cc), picked with the dense kernels'
// SimdLevel.
#pragma once

#include <cstdint>

#include "common/dtype.h"
#include "kernels/cpu/simd_level.h"

namespace tandem::kernels::cpu {

// 32 activations: x ~= d * qs; d is rounded to F16, as ggml's block_q8_0
// stores it, so the dots are llama.cpp's numbers.
struct ActBlock32 {
  float d;
  int8_t qs[32];
};

// 256 activations: x ~= d * qs; bsums[i] = sum of qs[16 i .. 16 i + 15].
struct ActBlock256 {
  float d;
  int8_t qs[256];
  int16_t bsums[16];
};

struct QuantDotTable {
  SimdLevel level;
  // n floats (a multiple of 32, resp. 256) into n / 32 (n / 256) blocks.
  void (*quantize32)(const float* x, ActBlock32* out, int64_t n);
  void (*quantize256)(const float* x, ActBlock256* out, int64_t n);
  // dot of one weight row of n values (its blocks at w) with an activation
  // row quantized to the matching block kind.
  float (*dotQ8_0)(const void* w, const ActBlock32* x, int64_t n);
  float (*dotQ4_0)(const void* w, const ActBlock32* x, int64_t n);
  float (*dotQ4_K)(const void* w, const ActBlock256* x, int64_t n);
  float (*dotQ6_K)(const void* w, const ActBlock256* x, int64_t n);
};

const QuantDotTable& scalarQuantDots();
// AVX2 (maddubs + madd); scalarQuantDots() where the build is not x86-64.
const QuantDotTable& avx2QuantDots();
// the best table for a dense kernel level (avx512 uses the avx2 table).
const QuantDotTable& quantDotsFor(SimdLevel level);

// true when x of dtype t is quantized to 256-blocks (the k-quants).
inline bool usesBlock256(DType t) { return t == DType::kQ4_K || t == DType::kQ6_K; }

}  // namespace tandem::kernels::cpu
