// Every 16-bit weight pattern widens to the same F32 at every simd level as
// common/dtype.h's scalar formulas: full vectors (loadF16 / loadBf16, which
// the AVX-512 tables build from two 256-bit halves or with one 512-bit
// widening) and row tails (the masked loads), on an unaligned start. The parity suite's random weights
// hold no infinities or NaNs and hardly a subnormal; this covers them all.
// And back: F32 values narrow to F16 / BF16 (fromF32, e.g. keys and values
// into a 16-bit KV cache) as common/dtype.h's f32ToF16 / f32ToBf16 do,
// ties to even, overflow, subnormals and NaN included.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "gtest/gtest.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/simd_level.h"

namespace tandem::kernels::cpu {
namespace {

// the tables this processor can run.
std::vector<const KernelTable*> runnableTables() {
  std::vector<const KernelTable*> out = {&scalarKernels()};
  const SimdLevel best = detectSimdLevel();
  if (best >= SimdLevel::kAvx2) out.push_back(&avx2Kernels());
  if (best >= SimdLevel::kAvx512) {
    // both widenings, whichever this processor's avx512Kernels() is
    out.push_back(&avx512KernelsWidening(true));
    out.push_back(&avx512KernelsWidening(false));
  }
  return out;
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// all 65536 patterns, then 65523 of them from element 1: an unaligned start
// and a 3-element tail at vector widths 8 and 16.
void expectEveryPatternWidens(DType dtype, float (*want)(uint16_t)) {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  for (const KernelTable* t : runnableTables()) {
    SCOPED_TRACE(std::string(simdLevelName(t->level)));
    for (const int64_t start : {0, 1}) {
      const int64_t n = start == 0 ? 65536 : 65536 - 13;
      std::vector<float> out(n, -7.0f);
      t->toF32(all.data() + start, dtype, out.data(), n);
      int wrong = 0;
      for (int64_t i = 0; i < n && wrong < 5; ++i) {
        const float w = want(all[start + i]);
        // a signalling f16 NaN comes back quiet from vcvtph2ps: NaN-ness only
        const bool same = std::isnan(w) ? std::isnan(out[i]) : bits(out[i]) == bits(w);
        if (!same) {
          ++wrong;
          ADD_FAILURE() << dtypeName(dtype) << " pattern 0x" << std::hex << all[start + i]
                        << " at element " << std::dec << i << " (start " << start << "): got "
                        << out[i] << ", want " << w;
        }
      }
    }
  }
}

TEST(HalfWideningTest, EveryF16PatternWidensLikeTheScalarFormula) {
  expectEveryPatternWidens(DType::kF16, &f16ToF32);
}

TEST(HalfWideningTest, EveryBf16PatternWidensLikeTheScalarFormula) {
  expectEveryPatternWidens(DType::kBF16, &bf16ToF32);
}

bool isF16NaN(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }
bool isBf16NaN(uint16_t h) { return (h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0; }

// F32 values around every F16 value: the value, its neighbours' midpoints
// (the ties) and a float either side of each midpoint; the range past
// 65504 (overflow) and below the smallest subnormal; infinities and NaNs;
// random floats across the exponents.
std::vector<float> narrowingInputs() {
  std::vector<float> x;
  for (uint32_t i = 0; i < 0x7c00; ++i) {
    const float v = f16ToF32(static_cast<uint16_t>(i)), next = f16ToF32(static_cast<uint16_t>(i + 1));
    const float mid = v + (next - v) / 2;
    for (const float f : {v, mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)}) {
      x.push_back(f);
      x.push_back(-f);
    }
  }
  for (const float f : {65504.0f, 65519.99f, 65520.0f, 70000.0f, 1e30f, 3e-8f, 2.9e-8f, 1e-30f, 0.0f,
                        INFINITY, NAN, std::numeric_limits<float>::signaling_NaN()}) {
    x.push_back(f);
    x.push_back(-f);
  }
  uint32_t s = 12345;
  for (int i = 0; i < 100000; ++i) {
    s = s * 1664525u + 1013904223u;
    float f;
    std::memcpy(&f, &s, 4);
    x.push_back(f);
  }
  return x;
}

void expectEveryValueNarrows(DType dtype, uint16_t (*want)(float), bool (*is_nan)(uint16_t)) {
  const std::vector<float> all = narrowingInputs();
  for (const KernelTable* t : runnableTables()) {
    SCOPED_TRACE(std::string(simdLevelName(t->level)));
    for (const int64_t start : {0, 1}) {
      const int64_t n = static_cast<int64_t>(all.size()) - start - (start == 0 ? 0 : 13);
      std::vector<uint16_t> out(n + 1, 0xdead);
      t->fromF32(all.data() + start, dtype, out.data(), n);
      EXPECT_EQ(out[n], 0xdead) << "wrote past the end";
      int wrong = 0;
      for (int64_t i = 0; i < n && wrong < 5; ++i) {
        const uint16_t w = want(all[start + i]);
        // NaN payloads may differ: NaN-ness only
        const bool same = is_nan(w) ? is_nan(out[i]) : out[i] == w;
        if (!same) {
          ++wrong;
          ADD_FAILURE() << dtypeName(dtype) << " value " << all[start + i] << " (0x" << std::hex
                        << bits(all[start + i]) << ") at element " << std::dec << i << ": got 0x"
                        << std::hex << out[i] << ", want 0x" << w;
        }
      }
    }
  }
}

TEST(HalfNarrowingTest, F32ValuesNarrowToF16LikeTheScalarFormula) {
  expectEveryValueNarrows(DType::kF16, &f32ToF16, &isF16NaN);
}

TEST(HalfNarrowingTest, F32ValuesNarrowToBf16LikeTheScalarFormula) {
  expectEveryValueNarrows(DType::kBF16, &f32ToBf16, &isBf16NaN);
}

}  // namespace
}  // namespace tandem::kernels::cpu
