// The block quantizers: round trips through dequantizeRow() for every type,
// and ggml's exact q8_0 / q4_0 bytes on hand-checked values.
#include "common/quantize.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "common/quant_blocks.h"
#include "gtest/gtest.h"

namespace tandem::quant {
namespace {

std::vector<float> gaussian(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

std::vector<float> roundTrip(DType t, const std::vector<float>& x) {
  std::vector<char> q(rowBytes(t, x.size()));
  quantizeRow(t, x.data(), q.data(), static_cast<int64_t>(x.size()));
  std::vector<float> y(x.size());
  dequantizeRow(t, q.data(), y.data(), static_cast<int64_t>(x.size()));
  return y;
}

// rms error of unit gaussians, and the bound it must stay under: about
// half the expected step of each format (q8_0 amax/127 per 32, q4_0
// amax/8 per 32, q4_k range/15 per 32, q6_k amax/32 per 16).
TEST(QuantizeTest, RoundTripsGaussiansWithinTheFormatsResolution) {
  const std::vector<float> x = gaussian(256 * 64, 11);
  struct Bound {
    DType t;
    double rms;
  };
  for (Bound b : {Bound{DType::kQ8_0, 0.012}, Bound{DType::kQ4_0, 0.15},
                  Bound{DType::kQ4_K, 0.1}, Bound{DType::kQ6_K, 0.03}}) {
    const std::vector<float> y = roundTrip(b.t, x);
    double se = 0.0;
    for (size_t i = 0; i < x.size(); ++i) se += (x[i] - y[i]) * (x[i] - y[i]);
    const double rms = std::sqrt(se / x.size());
    EXPECT_LT(rms, b.rms) << dtypeName(b.t);
    EXPECT_GT(rms, 0.0) << dtypeName(b.t);
  }
}

// every value within one step of its block: q8_0 d/2, the others a step
// (clamping at the grid's edge can cost a whole step).
TEST(QuantizeTest, EveryValueStaysWithinItsBlocksStep) {
  const std::vector<float> x = gaussian(256 * 8, 12);
  for (DType t : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K}) {
    const std::vector<float> y = roundTrip(t, x);
    const int block = t == DType::kQ6_K ? 16 : 32;
    const float levels = t == DType::kQ8_0 ? 254.0f : t == DType::kQ6_K ? 63.0f : 15.0f;
    for (size_t b = 0; b < x.size(); b += block) {
      float lo = 0.0f, hi = 0.0f;
      for (int i = 0; i < block; ++i) {
        lo = std::min(lo, x[b + i]);
        hi = std::max(hi, x[b + i]);
      }
      const float amax = std::max(-lo, hi);
      // q4_k's 6-bit sub-block scales round too: allow two steps there.
      const float step = (t == DType::kQ4_K ? 2.0f : 1.0f) * 2.0f * amax / levels;
      for (int i = 0; i < block; ++i) {
        ASSERT_LE(std::fabs(x[b + i] - y[b + i]), step) << dtypeName(t) << " at " << b + i;
      }
    }
  }
}

TEST(QuantizeTest, ZerosStayZero) {
  const std::vector<float> x(256, 0.0f);
  for (DType t : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K}) {
    for (float v : roundTrip(t, x)) ASSERT_EQ(v, 0.0f) << dtypeName(t);
  }
}

// ggml's quantize_row_q8_0_ref and q4_0_ref on values worked by hand.
TEST(QuantizeTest, WritesGgmlsQ8_0AndQ4_0Bytes) {
  std::vector<float> x(32, 0.0f);
  x[0] = 1.27f;
  x[1] = -0.5f;
  x[2] = 0.004f;  // 0.4 of a step: rounds to 0
  BlockQ8_0 q8;
  quantizeRow(DType::kQ8_0, x.data(), &q8, 32);
  EXPECT_EQ(q8.d, f32ToF16(0.01f));
  EXPECT_EQ(q8.qs[0], 127);
  EXPECT_EQ(q8.qs[1], -50);
  EXPECT_EQ(q8.qs[2], 0);

  x[1] = -1.6f;  // the largest |x|: d = -1.6 / -8 = 0.2
  BlockQ4_0 q4;
  quantizeRow(DType::kQ4_0, x.data(), &q4, 32);
  EXPECT_EQ(q4.d, f32ToF16(0.2f));
  EXPECT_EQ(q4.qs[1] & 0xF, 0);   // -1.6 / 0.2 + 8.5 = 0.5 -> 0
  EXPECT_EQ(q4.qs[0] & 0xF, 14);  // 1.27 / 0.2 + 8.5 = 14.85 -> 14
  EXPECT_EQ(q4.qs[3] & 0xF, 8);   // 0 -> 8
}

}  // namespace
}  // namespace tandem::quant
