#include "kernels/reference/operand_rounding.h"

#include <algorithm>
#include <cmath>

#include "common/quant_blocks.h"

namespace tandem::kernels {

void roundTripActQ8(float* x, int64_t n, int group) {
  for (int64_t b = 0; b + group <= n; b += group) {
    float amax = 0.0f;
    for (int i = 0; i < group; ++i) amax = std::max(amax, std::fabs(x[b + i]));
    float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    if (group == 32) d = f16ToF32(f32ToF16(d));
    for (int i = 0; i < group; ++i) x[b + i] = d * std::nearbyint(x[b + i] * id);
  }
}

void roundTo16Bit(float* x, int64_t n, DType dtype) {
  for (int64_t i = 0; i < n; ++i) {
    x[i] = dtype == DType::kBF16 ? bf16ToF32(f32ToBf16(x[i])) : f16ToF32(f32ToF16(x[i]));
  }
}

std::vector<char> randomQuantBlocks(DType dtype, int64_t rows, int64_t cols, std::mt19937& rng) {
  const int64_t blocks = rows * cols / quant::blockValues(dtype);
  std::vector<char> bytes(blocks * quant::blockBytes(dtype));
  std::uniform_int_distribution<int> byte(0, 255);
  for (char& b : bytes) b = static_cast<char>(byte(rng));
  auto scale = [&](float max) {
    return f32ToF16(std::uniform_real_distribution<float>(0.25f * max, max)(rng));
  };
  for (int64_t i = 0; i < blocks; ++i) {
    char* block = bytes.data() + i * quant::blockBytes(dtype);
    switch (dtype) {
      case DType::kQ8_0:
        reinterpret_cast<quant::BlockQ8_0*>(block)->d = scale(1.0f / 127);
        break;
      case DType::kQ4_0:
        reinterpret_cast<quant::BlockQ4_0*>(block)->d = scale(1.0f / 8);
        break;
      case DType::kQ4_K: {
        auto* b = reinterpret_cast<quant::BlockQ4_K*>(block);
        b->d = scale(1.0f / (63 * 15));
        b->dmin = scale(1.0f / 63);
        break;
      }
      case DType::kQ6_K:
        reinterpret_cast<quant::BlockQ6_K*>(block)->d = scale(1.0f / (128 * 32));
        break;
      default:
        break;
    }
  }
  return bytes;
}

}  // namespace tandem::kernels
