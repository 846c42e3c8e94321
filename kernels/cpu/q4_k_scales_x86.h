// The 8 6-bit scales and mins of a Q4_K block unpacked into one register:
// bytes 0..7 the scales, 8..15 the mins (common/quant_blocks.h's
// scaleMinK4 for j = 0..7 at once; ggml's utmp). Shared by the x86 dots
// (quant_dot_x86.h) and the AMX-INT8 kernel (quant_amx_kernel.cc). Like
// quant_dot_x86.h, included inside each file's anonymous namespace, after
// <immintrin.h>, <cstring> and common/quant_blocks.h: every file compiles
// its own copy with its own flags, so no copy built with wider ones can be
// the one the linker keeps for another.
#pragma once

inline __m128i scalesMinsK4(const quant::BlockQ4_K& b) {
  uint32_t u0, u1, u2;
  std::memcpy(&u0, b.scales, 4);
  std::memcpy(&u1, b.scales + 4, 4);
  std::memcpy(&u2, b.scales + 8, 4);
  const uint32_t m_hi = ((u2 >> 4) & 0x0f0f0f0f) | (((u1 >> 6) & 0x03030303) << 4);
  const uint32_t m_lo = u1 & 0x3f3f3f3f;
  const uint32_t s_hi = (u2 & 0x0f0f0f0f) | (((u0 >> 6) & 0x03030303) << 4);
  const uint32_t s_lo = u0 & 0x3f3f3f3f;
  return _mm_setr_epi32(static_cast<int>(s_lo), static_cast<int>(s_hi), static_cast<int>(m_lo),
                        static_cast<int>(m_hi));
}
