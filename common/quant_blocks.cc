#include "common/quant_blocks.h"

#include <cstring>

namespace tandem::quant {
namespace {

void dequantQ8_0(const BlockQ8_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK8_0) {
    const float d = f16ToF32(b[i].d);
    for (int j = 0; j < kQK8_0; ++j) y[j] = d * b[i].qs[j];
  }
}

void dequantQ4_0(const BlockQ4_0* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK4_0) {
    const float d = f16ToF32(b[i].d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      y[j] = d * ((b[i].qs[j] & 0xF) - 8);
      y[j + kQK4_0 / 2] = d * ((b[i].qs[j] >> 4) - 8);
    }
  }
}

void dequantQ4_K(const BlockQ4_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = f16ToF32(b[i].d);
    const float dmin = f16ToF32(b[i].dmin);
    const uint8_t* q = b[i].qs;
    for (int j = 0, is = 0; j < kQK_K; j += 64, is += 2, q += 32) {
      uint8_t sc, m;
      scaleMinK4(is, b[i].scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      scaleMinK4(is + 1, b[i].scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
    }
  }
}

void dequantQ6_K(const BlockQ6_K* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = f16ToF32(b[i].d);
    const uint8_t* ql = b[i].ql;
    const uint8_t* qh = b[i].qh;
    const int8_t* sc = b[i].scales;
    for (int n = 0; n < kQK_K; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * sc[is + 0] * q1;
        y[l + 32] = d * sc[is + 2] * q2;
        y[l + 64] = d * sc[is + 4] * q3;
        y[l + 96] = d * sc[is + 6] * q4;
      }
    }
  }
}

}  // namespace

bool isQuantized(DType t) {
  return t == DType::kQ8_0 || t == DType::kQ4_0 || t == DType::kQ4_K || t == DType::kQ6_K;
}

int blockValues(DType t) {
  switch (t) {
    case DType::kQ8_0: return kQK8_0;
    case DType::kQ4_0: return kQK4_0;
    case DType::kQ4_K:
    case DType::kQ6_K: return kQK_K;
    default: return 1;
  }
}

size_t blockBytes(DType t) {
  switch (t) {
    case DType::kQ8_0: return sizeof(BlockQ8_0);
    case DType::kQ4_0: return sizeof(BlockQ4_0);
    case DType::kQ4_K: return sizeof(BlockQ4_K);
    case DType::kQ6_K: return sizeof(BlockQ6_K);
    default: return dtypeSize(t);
  }
}

void dequantizeRow(DType t, const void* src, float* dst, int64_t n) {
  const int64_t nb = n / blockValues(t);
  switch (t) {
    case DType::kQ8_0: return dequantQ8_0(static_cast<const BlockQ8_0*>(src), dst, nb);
    case DType::kQ4_0: return dequantQ4_0(static_cast<const BlockQ4_0*>(src), dst, nb);
    case DType::kQ4_K: return dequantQ4_K(static_cast<const BlockQ4_K*>(src), dst, nb);
    case DType::kQ6_K: return dequantQ6_K(static_cast<const BlockQ6_K*>(src), dst, nb);
    case DType::kF32: std::memcpy(dst, src, n * sizeof(float)); return;
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = f16ToF32(static_cast<const uint16_t*>(src)[i]);
      return;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16ToF32(static_cast<const uint16_t*>(src)[i]);
      return;
    case DType::kI32:
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(static_cast<const int32_t*>(src)[i]);
      return;
  }
}

}  // namespace tandem::quant
