// The AMX-BF16 prefill matmul: where the processor has AMX it runs and
// matches a double-precision reference on the same BF16-rounded inputs;
// elsewhere detection says no and the AVX-512 table keeps its own kernel.
#include <cpuid.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "common/dtype.h"
#include "gtest/gtest.h"
#include "kernels/cpu/amx_matmul.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/simd_level.h"

namespace tandem::kernels::cpu {
namespace {

bool cpuidHasAmxBf16() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0, nullptr) < 7) return false;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  return ((edx >> 22) & 1u) != 0 && ((edx >> 24) & 1u) != 0;
}

// a prefill-sized matmul with BF16 weights and odd sizes (m, k and n past
// tile edges), plus its reference on the BF16-rounded x.
struct Case {
  int64_t m = 45, n = 50, k = 100;
  std::vector<float> x, bias, y, want;
  std::vector<uint16_t> w;
  Case() {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (int64_t i = 0; i < m * k; ++i) x.push_back(u(rng));
    for (int64_t i = 0; i < n * k; ++i) w.push_back(f32ToBf16(u(rng)));
    for (int64_t i = 0; i < n; ++i) bias.push_back(u(rng));
    y.assign(m * n, 0.0f);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = bias[j];
        for (int64_t kk = 0; kk < k; ++kk) {
          s += static_cast<double>(bf16ToF32(f32ToBf16(x[i * k + kk]))) * bf16ToF32(w[j * k + kk]);
        }
        want.push_back(static_cast<float>(s));
      }
    }
  }
  MatmulArgs args() { return {x.data(), w.data(), DType::kBF16, bias.data(), y.data(), m, n, k}; }
};

TEST(AmxMatmulTest, DetectionFollowsTheProcessor) {
  if (!cpuidHasAmxBf16()) {
    EXPECT_FALSE(amxBf16Usable());
    Case c;
    EXPECT_FALSE(useAmxMatmul(c.args()));
    return;
  }
  // the processor has it: usable unless the kernel, the build or the
  // environment said no; either way the choice follows usability
  Case c;
  EXPECT_EQ(useAmxMatmul(c.args()), amxBf16Usable());
}

TEST(AmxMatmulTest, MatchesTheReferenceWhereTheProcessorHasIt) {
  Case c;
  if (!amxBf16Usable()) {
    // no AMX here: amxMatmul is never chosen (Avx512TableMatches... checks
    // the fallback's numbers)
    EXPECT_FALSE(useAmxMatmul(c.args()));
    return;
  }
  amxMatmul(c.args(), 0, c.n);
  for (int64_t i = 0; i < c.m * c.n; ++i) EXPECT_NEAR(c.y[i], c.want[i], 1e-4f) << i;
  // and a task range off the panel edges
  Case d;
  amxMatmul(d.args(), 16, 40);
  for (int64_t i = 0; i < d.m; ++i) {
    for (int64_t j = 16; j < 40; ++j) EXPECT_NEAR(d.y[i * d.n + j], d.want[i * d.n + j], 1e-4f);
  }
}

// whichever kernel the AVX-512 table picks (AMX or its own), the result is
// the BF16 matmul within the tolerance of x rounded to BF16.
TEST(AmxMatmulTest, Avx512TableMatchesWithOrWithoutAmx) {
  Case c;
  // without AVX-512 the table this processor runs instead
  const KernelTable& table = detectSimdLevel() >= SimdLevel::kAvx512 ? avx512Kernels() : avx2Kernels();
  table.matmul(c.args(), 0, c.n);
  for (int64_t i = 0; i < c.m * c.n; ++i) {
    EXPECT_NEAR(c.y[i], c.want[i], 2e-2f) << i;
  }
}

}  // namespace
}  // namespace tandem::kernels::cpu
