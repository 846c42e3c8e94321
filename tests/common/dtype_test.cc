#include "common/dtype.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include "gtest/gtest.h"

namespace tandem {
namespace {

TEST(DTypeTest, F16RoundTripsEveryFiniteHalf) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    uint16_t half = static_cast<uint16_t>(h);
    if ((half & 0x7c00u) == 0x7c00u) continue;  // inf/nan checked below
    float f = f16ToF32(half);
    ASSERT_EQ(f32ToF16(f), half) << "half bits " << h;
  }
}

TEST(DTypeTest, F16ConvertsKnownValues) {
  EXPECT_EQ(f16ToF32(0x3c00), 1.0f);
  EXPECT_EQ(f16ToF32(0xc000), -2.0f);
  EXPECT_EQ(f16ToF32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(f32ToF16(65504.0f), 0x7bff);
  EXPECT_EQ(f32ToF16(1e6f), 0x7c00);  // overflows to inf
  EXPECT_TRUE(std::isinf(f16ToF32(0x7c00)));
  EXPECT_TRUE(std::isnan(f16ToF32(f32ToF16(std::numeric_limits<float>::quiet_NaN()))));
  // ties round to even: 1 + 2^-11 is halfway between 1 and 1 + 2^-10
  EXPECT_EQ(f32ToF16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(f32ToF16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
}

TEST(DTypeTest, Bf16RoundsToNearestEven) {
  EXPECT_EQ(bf16ToF32(0x3f80), 1.0f);
  EXPECT_EQ(f32ToBf16(1.0f), 0x3f80);
  // 1 + 2^-8 is halfway between bf16 1.0 and 1.0078125: rounds to even (1.0)
  EXPECT_EQ(f32ToBf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(f32ToBf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16ToF32(f32ToBf16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(DTypeTest, RowBytesHandlesBlockQuantization) {
  EXPECT_EQ(rowBytes(DType::kF32, 10), 40u);
  EXPECT_EQ(rowBytes(DType::kBF16, 10), 20u);
  EXPECT_EQ(rowBytes(DType::kQ8_0, 64), 68u);
}

}  // namespace
}  // namespace tandem
