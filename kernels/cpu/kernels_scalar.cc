// The portable kernels: a "vector" of one float, compiled with the baseline
// flags only, so they run on any x86-64 (and any other) processor.
#include <cmath>

#include "kernels/cpu/kernel_templates.h"

namespace tandem::kernels::cpu {

namespace {

struct ScalarVec {
  using F = float;
  static constexpr int kWidth = 1;
  static constexpr int kGemmRows = 4;
  static constexpr int kGemmVecs = 4;
  static constexpr int kBatchTileW = 4;
  static F zero() { return 0.0f; }
  static F set1(float f) { return f; }
  static F load(const float* p) { return *p; }
  static F loadN(const float* p, int n) { return n > 0 ? *p : 0.0f; }
  static void store(float* p, F v) { *p = v; }
  static void storeN(float* p, F v, int n) {
    if (n > 0) *p = v;
  }
  static F loadF16(const uint16_t* p) { return f16ToF32(*p); }
  static F loadF16N(const uint16_t* p, int n) { return n > 0 ? f16ToF32(*p) : 0.0f; }
  static F loadBf16(const uint16_t* p) { return bf16ToF32(*p); }
  static F loadBf16N(const uint16_t* p, int n) { return n > 0 ? bf16ToF32(*p) : 0.0f; }
  static void storeF16(uint16_t* p, F v) { *p = f32ToF16(v); }
  static void storeF16N(uint16_t* p, F v, int n) {
    if (n > 0) *p = f32ToF16(v);
  }
  static F add(F a, F b) { return a + b; }
  static F sub(F a, F b) { return a - b; }
  static F mul(F a, F b) { return a * b; }
  static F div(F a, F b) { return a / b; }
  static F max(F a, F b) { return a > b ? a : b; }
  static F fma(F a, F b, F c) { return a * b + c; }
  static float hsum(F v) { return v; }
  static F exp(F v) { return std::exp(v); }
};

}  // namespace

const KernelTable& scalarKernels() {
  static const KernelTable table = impl::makeKernelTable<ScalarVec>(SimdLevel::kScalar);
  return table;
}

}  // namespace tandem::kernels::cpu
