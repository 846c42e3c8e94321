// Dot products of a quantized weight row with an activation row quantized
// to 8 bits, as llama.cpp computes them: the activation is quantized once
// per matmul call (32-value blocks for q8_0/q4_0 weights, 256-value blocks
// with per-16 sums for the k-quants) and every weight block is multiplied in
// integers, scaled once per block. One table per instruction set
// (quant_dot_scalar.cc, quant_dot_avx2.cc, quant_dot_avx_vnni.cc,
// quant_dot_avx512.cc; the x86 ones share quant_dot_x86.h), picked with the
// dense kernels' SimdLevel and the processor's VNNI flags.
#pragma once

#include <cstdint>
#include <cstring>

#include "common/dtype.h"
#include "kernels/cpu/simd_level.h"

namespace tandem::kernels::cpu {

// 32 activations: x ~= d * qs; d is rounded to F16, as ggml's block_q8_0
// stores it, so the dots are llama.cpp's numbers. A table's qs may carry an
// offset (QuantDotTable::x32_offset).
struct ActBlock32 {
  float d;
  int8_t qs[32];
};

// 256 activations: x ~= d * qs; bsums[i] = sum of qs[16 i .. 16 i + 15];
// sub_sums[j] = bsums[2 j] + bsums[2 j + 1] as a float (exact), made once a
// row so a Q4_K dot takes its mins' lanes with one load instead of a widening
// and a conversion per weight row. Aligned so that every block's values (and
// sub_sums) start on a 32-byte boundary.
struct alignas(32) ActBlock256 {
  int8_t qs[256];
  int16_t bsums[16];
  float sub_sums[8];
  float d;
};

// the most activation rows one dot call of any table handles: every weight
// block is loaded and unpacked once and multiplied with up to the table's
// `rows` rows (register blocking: the weight bandwidth and unpacking of a batch
// are shared). 16 rows in every x86 table: with AVX2's 16 registers (the
// maddubs and the AVX-VNNI tables) the rows' sums spill to L1, which costs less
// than unpacking and transposing each block twice (measured 8 -> 16 rows on an
// Intel Xeon: maddubs q4_k 68 -> 75 GMAC/s, AVX-VNNI 84 -> 97; quant_dot_bench
// --simd avx2 --rows 16, bench/RESULTS.md "the AVX2 level's quantized dots
// (AVX-VNNI and maddubs)").
inline constexpr int kDotRows = 16;

// out[r] = dot of one weight row of n values (its blocks at w) with the
// activation row r quantized to the matching block kind, for r in
// [0, rows), rows in [1, table.rows]; row r's blocks start at x + r * x_stride.
template <typename ActBlock>
using DotRowsFn = void (*)(const void* w, const ActBlock* x, int64_t x_stride, int rows, int64_t n,
                           float* out);

// a tile of dots: out[c * out_stride + r] = dot of weight row c (its blocks
// at w[c]) with activation row r, for c in [0, weights), weights in [1,
// kTileWeights], r in [0, rows), rows >= 1; n a multiple of 256. Several
// weight rows share each activation load (a register tile of weight rows x
// activation rows), where a DotRowsFn call loads every activation value
// once per weight row; each chunk of the weight rows is unpacked once for
// all `rows` (prefill: once for every kTileRows of them, not once each).
// Bit for bit the table's DotRowsFn.
inline constexpr int kTileWeights = 4;
inline constexpr int kTileRows = 16;
template <typename ActBlock>
using DotTileFn = void (*)(const void* const* w, int weights, const ActBlock* x, int64_t x_stride, int rows,
                           int64_t n, float* out, int64_t out_stride);

struct QuantDotTable {
  // the dense level the table goes with; `vnni` when its byte products use
  // VPDPBUSD (AVX512-VNNI or AVX-VNNI) instead of maddubs + madd.
  SimdLevel level;
  bool vnni;
  // the most rows one dot call takes, in [1, kDotRows].
  int rows;
  // quantize32 stores each activation q as the byte q + x32_offset (mod
  // 256): 128 where the q8_0/q4_0 dots take the activations as VPDPBUSD's
  // unsigned operand (the weight block's sum, once per block, takes the
  // offset back out, so no per-row sign trick), else 0.
  uint8_t x32_offset;
  // quantize32 stores each complete run of 8 blocks (blocks 8g .. 8g + 7 of
  // a row, 288 bytes) as the 8 d's (32 bytes), then the values transposed
  // by 4-byte words: 32 bytes for each word t (values 4t .. 4t + 3) of the 8
  // blocks in turn, so one 256-bit load is a VPDPBUSD step over 8 blocks
  // whose int32 lanes are the 8 blocks' sums (act32Value, act32Scale).
  bool x32_grouped;
  // quantize256 stores each block's values transposed by 4-byte words:
  // bytes 32t + 4j .. 32t + 4j + 3 hold values 32j + 4t .. 32j + 4t + 3, so
  // 8 VPDPBUSD steps leave the 8 32-value sub-blocks' sums in the lanes
  // (act256Value); bsums and d as always.
  bool x256_grouped;
  // n floats (a multiple of 32, resp. 256) into n / 32 (n / 256) blocks.
  void (*quantize32)(const float* x, ActBlock32* out, int64_t n);
  void (*quantize256)(const float* x, ActBlock256* out, int64_t n);
  DotRowsFn<ActBlock32> dotQ8_0;
  DotRowsFn<ActBlock32> dotQ4_0;
  DotRowsFn<ActBlock256> dotQ4_K;
  DotRowsFn<ActBlock256> dotQ6_K;
  // the table for a single activation row (batch-1 decode) where it is
  // another, else null: AVX2's grouped q8_0/q4_0 dots transpose each run of
  // 8 weight blocks per call, which 8 rows repay and one row does not.
  const QuantDotTable* single_row = nullptr;
  // tiles for batches of at least kTileMinRows rows where the table has
  // them (the VNNI tables' q8_0, q4_0 and q4_k), else null.
  DotTileFn<ActBlock32> tileQ8_0 = nullptr;
  DotTileFn<ActBlock32> tileQ4_0 = nullptr;
  DotTileFn<ActBlock256> tileQ4_K = nullptr;
  // whether prefill (more rows of x than kQuantDotMaxRows) runs on these
  // dots, 16 rows of x at a time, instead of dequantized F32 panels and the
  // dense gemm: where they are the faster (measured: AVX512-VNNI and AVX-VNNI both
  // kinds; AVX2's maddubs only the k-quants, its q8_0/q4_0 dots are no
  // faster than the F32 gemm; bench/RESULTS.md).
  bool prefill32 = false;
  bool prefill256 = false;
};

inline constexpr int kTileMinRows = 4;

const QuantDotTable& scalarQuantDots();
// AVX2 (maddubs + madd); scalarQuantDots() where the build is not x86-64.
const QuantDotTable& avx2QuantDots();
// AVX2 code with AVX-VNNI's VEX VPDPBUSD; avx2QuantDots() where the
// processor lacks avxvnni (or the build is not x86-64).
const QuantDotTable& avxVnniQuantDots();
// AVX-512 F/BW/VL + AVX512-VNNI (EVEX VPDPBUSD, 256- and 512-bit);
// avx2QuantDots() where the processor lacks avx512vnni.
const QuantDotTable& avx512VnniQuantDots();
// the best table for a dense kernel level, chosen from what the processor
// has: avx512 -> avx512VnniQuantDots() with avx512vnni, else the avx2 level's
// choice; avx2 -> avxVnniQuantDots() with avxvnni, else avx2QuantDots().
// The environment variable TANDEM_CPU_VNNI=0 (or off) makes it
// avx2QuantDots() at both levels: the maddubs dots of a processor without
// VNNI (an AVX2-only EPYC), measured where VNNI is at hand.
// (The variable is read every call.)
const QuantDotTable& quantDotsFor(SimdLevel level);

// value l in [0, 32) of block b of an activation row of `blocks` blocks
// that `table`.quantize32 wrote (its offset taken back out).
inline int8_t act32Value(const QuantDotTable& table, const ActBlock32* row, int64_t blocks, int64_t b, int l) {
  uint8_t v = static_cast<uint8_t>(row[b].qs[l]);
  if (table.x32_grouped && b / 8 * 8 + 8 <= blocks) {
    const auto* run = reinterpret_cast<const uint8_t*>(row + b / 8 * 8);
    v = run[32 + 32 * (l / 4) + 4 * (b % 8) + l % 4];
  }
  return static_cast<int8_t>(static_cast<uint8_t>(v - table.x32_offset));
}

// value l in [0, 256) of an activation block that `table`.quantize256 wrote.
inline int8_t act256Value(const QuantDotTable& table, const ActBlock256& block, int l) {
  return table.x256_grouped ? block.qs[32 * (l % 32 / 4) + 4 * (l / 32) + l % 4] : block.qs[l];
}

// the scale d of that block.
inline float act32Scale(const QuantDotTable& table, const ActBlock32* row, int64_t blocks, int64_t b) {
  if (table.x32_grouped && b / 8 * 8 + 8 <= blocks) {
    float d;
    std::memcpy(&d, reinterpret_cast<const char*>(row + b / 8 * 8) + 4 * (b % 8), sizeof d);
    return d;
  }
  return row[b].d;
}

// what the processor reports (false off x86-64).
bool processorHasAvx512Vnni();
bool processorHasAvxVnni();

// true when x of dtype t is quantized to 256-blocks (the k-quants).
inline bool usesBlock256(DType t) { return t == DType::kQ4_K || t == DType::kQ6_K; }

}  // namespace tandem::kernels::cpu
