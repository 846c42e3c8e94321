#include "common/quant_blocks.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace tandem::quant {
namespace {

TEST(QuantBlocksTest, RowBytesAreWholeBlocks) {
  EXPECT_EQ(rowBytes(DType::kQ4_0, 64), 36u);
  EXPECT_EQ(rowBytes(DType::kQ4_K, 512), 288u);
  EXPECT_EQ(rowBytes(DType::kQ6_K, 256), 210u);
  EXPECT_EQ(blockValues(DType::kQ6_K), 256);
  EXPECT_EQ(blockBytes(DType::kQ4_0), 18u);
  EXPECT_TRUE(isQuantized(DType::kQ4_K));
  EXPECT_FALSE(isQuantized(DType::kBF16));
}

TEST(QuantBlocksTest, Q4_0TakesLowNibblesFirstThenHigh) {
  BlockQ4_0 b{};
  b.d = f32ToF16(0.5f);
  b.qs[0] = 0x9F;  // value 0: 15 - 8 = 7, value 16: 9 - 8 = 1
  b.qs[15] = 0x08;  // value 15: 0, value 31: -8
  std::vector<float> y(32);
  dequantizeRow(DType::kQ4_0, &b, y.data(), 32);
  EXPECT_FLOAT_EQ(y[0], 3.5f);
  EXPECT_FLOAT_EQ(y[16], 0.5f);
  EXPECT_FLOAT_EQ(y[15], 0.0f);
  EXPECT_FLOAT_EQ(y[31], -4.0f);
  EXPECT_FLOAT_EQ(y[1], -4.0f);  // a zero byte is -8
}

TEST(QuantBlocksTest, Q4_KAppliesEachSubBlocksScaleAndMin) {
  BlockQ4_K b{};
  b.d = f32ToF16(1.0f);
  b.dmin = f32ToF16(0.25f);
  // sub-block 0: scale 2, min 4 (low 6 bits of scales[0] and scales[4]);
  // sub-block 5: scale 3 | (scales[1] >> 6) << 4 = 3 + 16, min from scales[9]'s
  // high nibble | (scales[5] >> 6) << 4
  b.scales[0] = 2;
  b.scales[4] = 4;
  b.scales[9] = 0x73;  // sub-block 5: low scale 3, low min 7
  b.scales[1] = 0x40;  // sub-block 5's scale bit 4
  b.scales[5] = 0x80;  // sub-block 5's min bit 5
  std::memset(b.qs, 0x5A, sizeof b.qs);  // low nibble 10, high 5
  std::vector<float> y(256);
  dequantizeRow(DType::kQ4_K, &b, y.data(), 256);
  EXPECT_FLOAT_EQ(y[0], 2 * 10 - 0.25f * 4);   // sub-block 0, low nibbles
  EXPECT_FLOAT_EQ(y[5 * 32], 19 * 5 - 0.25f * (7 + 32));  // sub-block 5, high nibbles
}

TEST(QuantBlocksTest, Q6_KCombinesLowAndHighBitsAroundThirtyTwo) {
  BlockQ6_K b{};
  b.d = f32ToF16(0.5f);
  for (int i = 0; i < 16; ++i) b.scales[i] = static_cast<int8_t>(i - 8);
  b.ql[0] = 0x3F;  // value 0: low 0xF, value 64: low 0x3
  b.qh[0] = 0x31;  // value 0: high 1 -> 0x1F - 32 = -1; value 64: high 3 -> 0x33 - 32 = 19
  std::vector<float> y(256);
  dequantizeRow(DType::kQ6_K, &b, y.data(), 256);
  EXPECT_FLOAT_EQ(y[0], 0.5f * -8 * -1);
  EXPECT_FLOAT_EQ(y[64], 0.5f * (4 - 8) * 19);
  EXPECT_FLOAT_EQ(y[1], 0.5f * -8 * -32);  // all-zero bits are -32
}

}  // namespace
}  // namespace tandem::quant
