#include "common/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/quant_blocks.h"
#include "common/status.h"

namespace tandem::quant {
namespace {

int nearestInt(float f) { return static_cast<int>(std::lrintf(f)); }

void quantizeQ8_0(const float* x, BlockQ8_0* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK8_0) {
    float amax = 0.0f;
    for (int j = 0; j < kQK8_0; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = f32ToF16(d);
    for (int j = 0; j < kQK8_0; ++j) y[i].qs[j] = static_cast<int8_t>(std::roundf(x[j] * id));
  }
}

void quantizeQ4_0(const float* x, BlockQ4_0* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK4_0) {
    float amax = 0.0f, max = 0.0f;  // max keeps the sign of the largest |x|
    for (int j = 0; j < kQK4_0; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = f32ToF16(d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      const auto q = [&](float v) {
        return static_cast<uint8_t>(std::min(15, static_cast<int>(static_cast<int8_t>(v * id + 8.5f))));
      };
      y[i].qs[j] = q(x[j]) | (q(x[j + kQK4_0 / 2]) << 4);
    }
  }
}

// x = d * sc * q - dmin * m per sub-block of 32, q in [0, 15], sc and m
// 6-bit: each sub-block spans [min(0, lo), hi] in 15 steps.
void quantizeQ4_K(const float* x, BlockQ4_K* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK_K) {
    float scale[8], neg_min[8];
    float max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < 8; ++j) {
      float lo = 0.0f, hi = 0.0f;
      for (int l = 0; l < 32; ++l) {
        lo = std::min(lo, x[32 * j + l]);
        hi = std::max(hi, x[32 * j + l]);
      }
      scale[j] = (hi - lo) / 15.0f;
      neg_min[j] = -lo;
      max_scale = std::max(max_scale, scale[j]);
      max_min = std::max(max_min, neg_min[j]);
    }
    const float d = max_scale / 63.0f, dmin = max_min / 63.0f;
    y[i].d = f32ToF16(d);
    y[i].dmin = f32ToF16(dmin);
    // quantize against the stored (f16-rounded) super-block scales.
    const float dq = f16ToF32(y[i].d), dminq = f16ToF32(y[i].dmin);
    uint8_t sc[8], m[8];
    for (int j = 0; j < 8; ++j) {
      sc[j] = static_cast<uint8_t>(std::clamp(dq > 0 ? nearestInt(scale[j] / dq) : 0, 0, 63));
      m[j] = static_cast<uint8_t>(std::clamp(dminq > 0 ? nearestInt(neg_min[j] / dminq) : 0, 0, 63));
    }
    std::memset(y[i].scales, 0, sizeof(y[i].scales));
    for (int j = 0; j < 8; ++j) {
      if (j < 4) {
        y[i].scales[j] = sc[j];
        y[i].scales[j + 4] = m[j];
      } else {
        y[i].scales[j + 4] = (sc[j] & 0xF) | ((m[j] & 0xF) << 4);
        y[i].scales[j - 4] |= (sc[j] >> 4) << 6;
        y[i].scales[j] |= (m[j] >> 4) << 6;
      }
    }
    uint8_t L[kQK_K];
    for (int j = 0; j < 8; ++j) {
      const float ds = dq * sc[j], dm = dminq * m[j];
      for (int l = 0; l < 32; ++l) {
        const int q = ds > 0 ? nearestInt((x[32 * j + l] + dm) / ds) : 0;
        L[32 * j + l] = static_cast<uint8_t>(std::clamp(q, 0, 15));
      }
    }
    uint8_t* q = y[i].qs;
    for (int j = 0; j < kQK_K; j += 64, q += 32) {
      for (int l = 0; l < 32; ++l) q[l] = L[j + l] | (L[j + l + 32] << 4);
    }
  }
}

// x = d * sc * (q - 32) per sub-block of 16, q in [0, 63], sc an int8.
void quantizeQ6_K(const float* x, BlockQ6_K* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK_K) {
    float scale[16];
    float max_scale = 0.0f, amax_scale = 0.0f;
    for (int ib = 0; ib < 16; ++ib) {
      float amax = 0.0f, max = 0.0f;
      for (int l = 0; l < 16; ++l) {
        const float v = x[16 * ib + l];
        if (std::fabs(v) > amax) {
          amax = std::fabs(v);
          max = v;
        }
      }
      scale[ib] = max / -32.0f;  // the largest |x| lands on q - 32 = -32
      if (std::fabs(scale[ib]) > amax_scale) {
        amax_scale = std::fabs(scale[ib]);
        max_scale = scale[ib];
      }
    }
    const float iscale = max_scale != 0.0f ? -128.0f / max_scale : 0.0f;
    y[i].d = f32ToF16(iscale != 0.0f ? 1.0f / iscale : 0.0f);
    const float dq = f16ToF32(y[i].d);
    for (int ib = 0; ib < 16; ++ib) {
      y[i].scales[ib] = static_cast<int8_t>(std::min(127, nearestInt(iscale * scale[ib])));
    }
    uint8_t L[kQK_K];
    for (int ib = 0; ib < 16; ++ib) {
      const float ds = dq * y[i].scales[ib];
      for (int l = 0; l < 16; ++l) {
        const int q = ds != 0.0f ? nearestInt(x[16 * ib + l] / ds) : 0;
        L[16 * ib + l] = static_cast<uint8_t>(std::clamp(q, -32, 31) + 32);
      }
    }
    uint8_t* ql = y[i].ql;
    uint8_t* qh = y[i].qh;
    for (int j = 0; j < kQK_K; j += 128, ql += 64, qh += 32) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t q1 = L[j + l], q2 = L[j + l + 32], q3 = L[j + l + 64], q4 = L[j + l + 96];
        ql[l] = (q1 & 0xF) | ((q3 & 0xF) << 4);
        ql[l + 32] = (q2 & 0xF) | ((q4 & 0xF) << 4);
        qh[l] = (q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6);
      }
    }
  }
}

}  // namespace

void quantizeRow(DType t, const float* src, void* dst, int64_t n) {
  TANDEM_CHECK(isQuantized(t) && n % blockValues(t) == 0);
  const int64_t nb = n / blockValues(t);
  switch (t) {
    case DType::kQ8_0: return quantizeQ8_0(src, static_cast<BlockQ8_0*>(dst), nb);
    case DType::kQ4_0: return quantizeQ4_0(src, static_cast<BlockQ4_0*>(dst), nb);
    case DType::kQ4_K: return quantizeQ4_K(src, static_cast<BlockQ4_K*>(dst), nb);
    case DType::kQ6_K: return quantizeQ6_K(src, static_cast<BlockQ6_K*>(dst), nb);
    default: break;
  }
}

}  // namespace tandem::quant
