// The AMX-BF16 prefill matmul: where the processor has AMX it runs and
// matches a double-precision reference on the unrounded x within the error
// of x and w split into BF16 parts (kernels_amx.cc), for BF16, F16 and F32
// weights and block-quantized ones (against their dequantized values);
// elsewhere detection says no.
#include <cpuid.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <thread>
#include <tuple>
#include <vector>

#include "common/dtype.h"
#include "common/quant_blocks.h"
#include "common/quantize.h"
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

// a prefill-sized matmul with odd sizes (m, k and n past tile edges), its
// reference in doubles and each output's sum of |x w| (the scale of the
// rounding error).
struct Case {
  int64_t m, n, k;
  DType dtype;
  std::vector<float> x, bias, y, want, scale;
  std::vector<float> w32;  // F32 weights, or a quantized one's values
  std::vector<uint16_t> w16;
  std::vector<char> wq;  // a quantized w's blocks
  Case(int64_t m_, int64_t n_, int64_t k_, DType t) : m(m_), n(n_), k(k_), dtype(t) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (int64_t i = 0; i < m * k; ++i) x.push_back(u(rng));
    for (int64_t i = 0; i < n * k; ++i) {
      const float v = u(rng);
      if (t == DType::kF32 || quant::isQuantized(t)) {
        w32.push_back(v);
      } else {
        w16.push_back(t == DType::kBF16 ? f32ToBf16(v) : f32ToF16(v));
      }
    }
    if (quant::isQuantized(t)) {
      const size_t row_bytes = rowBytes(t, k);
      wq.resize(row_bytes * n);
      for (int64_t j = 0; j < n; ++j) {
        quant::quantizeRow(t, w32.data() + j * k, wq.data() + j * row_bytes, k);
        quant::dequantizeRow(t, wq.data() + j * row_bytes, w32.data() + j * k, k);
      }
    }
    for (int64_t i = 0; i < n; ++i) bias.push_back(u(rng));
    y.assign(m * n, 0.0f);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = bias[j], a = 0.0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const double p = static_cast<double>(x[i * k + kk]) * wAt(j * k + kk);
          s += p;
          a += std::fabs(p);
        }
        want.push_back(static_cast<float>(s));
        scale.push_back(static_cast<float>(a));
      }
    }
  }
  float wAt(int64_t i) const {
    if (!w32.empty()) return w32[i];
    return dtype == DType::kBF16 ? bf16ToF32(w16[i]) : f16ToF32(w16[i]);
  }
  MatmulArgs args() {
    const void* w = !wq.empty() ? static_cast<const void*>(wq.data())
                    : dtype == DType::kF32 ? static_cast<const void*>(w32.data())
                                           : w16.data();
    return {x.data(), w, dtype, bias.data(), y.data(), m, n, k};
  }
};

// every task on its own thread, as the pool may run them
const ParallelTasks kThreads = [](int count, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  for (int t = 0; t < count; ++t) threads.emplace_back(fn, t);
  for (std::thread& t : threads) t.join();
};

// x to 24 significant bits and F32, F16 and BF16 weights exactly: F32
// accumulation's error, at most 1.3e-7 of sum |x w| in these cases (each
// product of parts left out costs 4e-7 to 2e-6 of it: dropping x0 w2 of an
// F32 weight fails here); dequantized block values (up to 19 significant
// bits) keep 16 bits, 2^-17 of it (one BF16 product would be off by ~2^-9).
float splitTolerance(DType w) { return quant::isQuantized(w) ? 6e-5f : 5e-7f; }

TEST(AmxMatmulTest, DetectionFollowsTheProcessor) {
  Case c(45, 50, 100, DType::kBF16);
  Case h(45, 50, 100, DType::kF16);
  Case f(45, 50, 100, DType::kF32);
  if (!cpuidHasAmxBf16()) {
    EXPECT_FALSE(amxBf16Usable());
    EXPECT_FALSE(useAmxMatmul(c.args()));
    EXPECT_FALSE(useAmxMatmul(h.args()));
    EXPECT_FALSE(useAmxMatmul(f.args()));
    return;
  }
  // the processor has it: usable unless the kernel, the build or the
  // environment said no; either way the choice follows usability, for
  // prefill-sized matmuls only
  EXPECT_EQ(useAmxMatmul(c.args()), amxBf16Usable());
  EXPECT_EQ(useAmxMatmul(h.args()), amxBf16Usable());
  EXPECT_EQ(useAmxMatmul(f.args()), amxBf16Usable());
  Case small(kAmxMinRows - 1, 50, 100, DType::kBF16);
  EXPECT_FALSE(useAmxMatmul(small.args()));
}

TEST(AmxMatmulTest, MatchesTheReferenceWhereTheProcessorHasIt) {
  if (!amxBf16Usable()) {
    // no AMX here: the backend never picks the tiles (the table's own
    // kernel is checked below)
    Case c(45, 50, 100, DType::kBF16);
    EXPECT_FALSE(useAmxMatmul(c.args()));
    return;
  }
  struct Shape {
    int64_t m, n, k;
    int threads;
  };
  // tile edges in every dimension; several tasks; one panel per task and
  // many; k one block, and past it
  for (const Shape s : {Shape{45, 50, 100, 1}, Shape{32, 32, 32, 1}, Shape{70, 200, 300, 2}, Shape{33, 17, 64, 3},
                        Shape{130, 96, 768, 2}}) {
    for (const DType t : {DType::kBF16, DType::kF16, DType::kF32}) {
      Case c(s.m, s.n, s.k, t);
      amxMatmul(c.args(), s.threads, kThreads);
      for (int64_t i = 0; i < c.m * c.n; ++i) {
        ASSERT_NEAR(c.y[i], c.want[i], splitTolerance(t) * c.scale[i])
            << dtypeName(t) << " m " << s.m << " n " << s.n << " k " << s.k << " at " << i;
      }
    }
  }
}

// quantized weights: each panel dequantized, then packed as F32 rows; k a
// multiple of the format's block (256 for the k-quants), past one tile
// edge in m and n, several tasks.
TEST(AmxMatmulTest, QuantizedWeightsMatchTheirDequantizedValues) {
  if (!amxBf16Usable()) {
    Case c(45, 50, 256, DType::kQ8_0);
    EXPECT_FALSE(useAmxMatmul(c.args()));
    return;
  }
  for (const DType t : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K}) {
    for (const auto& [m, n, k, threads] : {std::tuple{45, 50, 256, 1}, std::tuple{130, 96, 768, 2},
                                          std::tuple{33, 70, 512, 3}}) {
      Case c(m, n, k, t);
      ASSERT_TRUE(useAmxMatmul(c.args()));
      amxMatmul(c.args(), threads, kThreads);
      for (int64_t i = 0; i < c.m * c.n; ++i) {
        ASSERT_NEAR(c.y[i], c.want[i], splitTolerance(t) * c.scale[i])
            << dtypeName(t) << " m " << m << " n " << n << " k " << k << " at " << i;
      }
    }
  }
  // a k that is no whole number of blocks is not the tiles' to take
  Case odd(45, 50, 256, DType::kQ8_0);
  MatmulArgs a = odd.args();
  a.k = 250;
  EXPECT_FALSE(useAmxMatmul(a));
}

// with AMX or without, the AVX-512 table's own kernel (every matmul of
// fewer rows, and every matmul where there is no AMX) gives the matmul.
TEST(AmxMatmulTest, Avx512TableMatchesTheReference) {
  Case c(45, 50, 100, DType::kBF16);
  const KernelTable& table = detectSimdLevel() >= SimdLevel::kAvx512 ? avx512Kernels() : avx2Kernels();
  table.matmul(c.args(), 0, c.n);
  for (int64_t i = 0; i < c.m * c.n; ++i) EXPECT_NEAR(c.y[i], c.want[i], 1e-5f * c.scale[i] + 1e-6f) << i;
}

}  // namespace
}  // namespace tandem::kernels::cpu
