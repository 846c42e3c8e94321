// Element types of model tensors and their conversions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace tandem {

// kQ4_0, kQ4_K, kQ6_K and kQ8_0 are GGUF's block-quantized types
// (common/quant_blocks.h has their layouts).
enum class DType : uint8_t { kF32, kF16, kBF16, kQ8_0, kI32, kQ4_0, kQ4_K, kQ6_K };

// bytes per element; for block-quantized types, 0 (use rowBytes()).
size_t dtypeSize(DType t);
std::string_view dtypeName(DType t);
// bytes of one row of `n` elements (handles block quantization: q8_0 packs 32
// values in 34 bytes, so n must be a multiple of 32; q4_k and q6_k pack 256).
size_t rowBytes(DType t, size_t n);

inline float bf16ToF32(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
// round to nearest even, as torch does; NaN stays NaN.
inline uint16_t f32ToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
float f16ToF32(uint16_t h);
uint16_t f32ToF16(float f);

}  // namespace tandem
