// Every 16-bit weight pattern widens to the same F32 at every simd level as
// common/dtype.h's scalar formulas: full vectors (loadF16 / loadBf16, which
// the AVX-512 tables build from two 256-bit halves or with one 512-bit
// widening) and row tails (the masked loads), on an unaligned start. The parity suite's random weights
// hold no infinities or NaNs and hardly a subnormal; this covers them all.
#include <cmath>
#include <cstdint>
#include <cstring>
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

}  // namespace
}  // namespace tandem::kernels::cpu
