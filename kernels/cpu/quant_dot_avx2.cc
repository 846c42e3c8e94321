// The AVX2 dot products of quant_dot.h (compiled with -mavx2 -mfma -mf16c,
// called only when the processor has them). Weights and activations are
// multiplied as bytes with _mm256_maddubs_epi16 (unsigned x signed, pairs
// summed to int16), widened with _mm256_madd_epi16, and scaled in float once
// per block: ggml's scheme. Signed q8_0 x q8 uses the sign trick
// (|w| * (x * sign(w))) so maddubs sees an unsigned left operand.
#include "kernels/cpu/quant_dot.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <cmath>

#include "common/quant_blocks.h"

namespace tandem::kernels::cpu {

namespace {

using namespace tandem::quant;

float halfToFloat(uint16_t h) { return _cvtsh_ss(h); }

float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

float hmaxAbs(const float* x, int n) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 m = _mm256_setzero_ps();
  for (int i = 0; i < n; i += 8) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// 32 floats * id, rounded to nearest even, into 32 int8 (as the scalar
// table: lrintf of the same product).
void quantize32Values(const float* x, float id, int8_t* q) {
  const __m256 mul = _mm256_set1_ps(id);
  __m256i i[4];
  for (int j = 0; j < 4; ++j) {
    i[j] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * j), mul),
                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  const __m256i p16a = _mm256_packs_epi32(i[0], i[1]);
  const __m256i p16b = _mm256_packs_epi32(i[2], i[3]);
  const __m256i p8 = _mm256_packs_epi16(p16a, p16b);
  const __m256i ordered = _mm256_permutevar8x32_epi32(p8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), ordered);
}

void quantize32(const float* x, ActBlock32* out, int64_t n) {
  for (int64_t i = 0; i < n / 32; ++i, x += 32) {
    const float amax = hmaxAbs(x, 32);
    // the scale rounded to F16, as the scalar table
    out[i].d = halfToFloat(_cvtss_sh(amax / 127.0f, _MM_FROUND_TO_NEAREST_INT));
    quantize32Values(x, amax != 0.0f ? 127.0f / amax : 0.0f, out[i].qs);
  }
}

void quantize256(const float* x, ActBlock256* out, int64_t n) {
  for (int64_t i = 0; i < n / 256; ++i, x += 256) {
    const float amax = hmaxAbs(x, 256);
    out[i].d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    for (int j = 0; j < 8; ++j) quantize32Values(x + 32 * j, id, out[i].qs + 32 * j);
    for (int j = 0; j < 16; ++j) {
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(out[i].qs + 16 * j));
      __m128i s = _mm_madd_epi16(_mm_add_epi16(_mm_cvtepi8_epi16(b), _mm_cvtepi8_epi16(_mm_srli_si128(b, 8))),
                                 _mm_set1_epi16(1));
      s = _mm_hadd_epi32(s, s);
      s = _mm_hadd_epi32(s, s);
      out[i].bsums[j] = static_cast<int16_t>(_mm_cvtsi128_si32(s));
    }
  }
}

__m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// 8 int32 partial sums of w[i] * x[i] over 32 signed bytes.
__m256i mulSumI8(__m256i w, __m256i x) {
  const __m256i dot = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
  return _mm256_madd_epi16(dot, _mm256_set1_epi16(1));
}

float dotQ8_0(const void* w, const ActBlock32* x, int64_t n) {
  const auto* b = static_cast<const BlockQ8_0*>(w);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / 32; ++i) {
    const __m256 d = _mm256_set1_ps(halfToFloat(b[i].d) * x[i].d);
    const __m256i s = mulSumI8(load32(b[i].qs), load32(x[i].qs));
    acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(s), acc);
  }
  return hsum(acc);
}

float dotQ4_0(const void* w, const ActBlock32* x, int64_t n) {
  const auto* b = static_cast<const BlockQ4_0*>(w);
  const __m256i low4 = _mm256_set1_epi8(0xF);
  const __m256i eight = _mm256_set1_epi8(8);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < n / 32; ++i) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b[i].qs));
    // low nibbles are values 0..15, high nibbles 16..31
    const __m256i nibbles = _mm256_and_si256(
        _mm256_inserti128_si256(_mm256_castsi128_si256(packed), _mm_srli_epi16(packed, 4), 1), low4);
    const __m256 d = _mm256_set1_ps(halfToFloat(b[i].d) * x[i].d);
    const __m256i s = mulSumI8(_mm256_sub_epi8(nibbles, eight), load32(x[i].qs));
    acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(s), acc);
  }
  return hsum(acc);
}

float dotQ4_K(const void* w, const ActBlock256* x, int64_t n) {
  const auto* b = static_cast<const BlockQ4_K*>(w);
  const __m256i low4 = _mm256_set1_epi8(0xF);
  __m256 acc = _mm256_setzero_ps();
  float acc_min = 0.0f;
  for (int64_t i = 0; i < n / 256; ++i) {
    uint8_t sc[8], m[8];
    int mins = 0;
    for (int j = 0; j < 8; ++j) {
      scaleMinK4(j, b[i].scales, &sc[j], &m[j]);
      mins += m[j] * (x[i].bsums[2 * j] + x[i].bsums[2 * j + 1]);
    }
    __m256i sumi = _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) {
      const __m256i q = load32(b[i].qs + 32 * j);
      const __m256i ql = _mm256_and_si256(q, low4);
      const __m256i qh = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
      const __m256i pl = _mm256_madd_epi16(_mm256_maddubs_epi16(ql, load32(x[i].qs + 64 * j)),
                                           _mm256_set1_epi16(sc[2 * j]));
      const __m256i ph = _mm256_madd_epi16(_mm256_maddubs_epi16(qh, load32(x[i].qs + 64 * j + 32)),
                                           _mm256_set1_epi16(sc[2 * j + 1]));
      sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(pl, ph));
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(x[i].d * halfToFloat(b[i].d)), _mm256_cvtepi32_ps(sumi), acc);
    acc_min += x[i].d * halfToFloat(b[i].dmin) * static_cast<float>(mins);
  }
  return hsum(acc) - acc_min;
}

float dotQ6_K(const void* w, const ActBlock256* x, int64_t n) {
  const auto* b = static_cast<const BlockQ6_K*>(w);
  const __m256i low4 = _mm256_set1_epi8(0xF);
  const __m256i bits45 = _mm256_set1_epi8(0x30);
  __m256 acc = _mm256_setzero_ps();
  float acc_bias = 0.0f;
  for (int64_t i = 0; i < n / 256; ++i) {
    const int8_t* sc = b[i].scales;
    int bias = 0;  // sum of sc * sum(x) per sub-block: the "- 32" of q
    for (int ib = 0; ib < 16; ++ib) bias += sc[ib] * x[i].bsums[ib];
    __m256i sumi = _mm256_setzero_si256();
    const uint8_t* ql = b[i].ql;
    const uint8_t* qh = b[i].qh;
    for (int h = 0; h < 2; ++h, ql += 64, qh += 32) {
      const __m256i la = load32(ql), lb = load32(ql + 32), hb = load32(qh);
      __m256i q[4];
      q[0] = _mm256_or_si256(_mm256_and_si256(la, low4), _mm256_and_si256(_mm256_slli_epi16(hb, 4), bits45));
      q[1] = _mm256_or_si256(_mm256_and_si256(lb, low4), _mm256_and_si256(_mm256_slli_epi16(hb, 2), bits45));
      q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(la, 4), low4), _mm256_and_si256(hb, bits45));
      q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lb, 4), low4),
                             _mm256_and_si256(_mm256_srli_epi16(hb, 2), bits45));
      for (int k = 0; k < 4; ++k) {
        const int s = 8 * h + 2 * k;  // sub-blocks s (bytes 0..15) and s + 1
        const __m256i scales = _mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_set1_epi16(sc[s])), _mm_set1_epi16(sc[s + 1]), 1);
        const __m256i p = _mm256_maddubs_epi16(q[k], load32(x[i].qs + 128 * h + 32 * k));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(p, scales));
      }
    }
    const float d = x[i].d * halfToFloat(b[i].d);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    acc_bias += d * 32.0f * static_cast<float>(bias);
  }
  return hsum(acc) - acc_bias;
}

}  // namespace

const QuantDotTable& avx2QuantDots() {
  static const QuantDotTable table{SimdLevel::kAvx2, quantize32, quantize256,
                                   dotQ8_0,          dotQ4_0,    dotQ4_K,    dotQ6_K};
  return table;
}

}  // namespace tandem::kernels::cpu

#else  // not x86-64: detectSimdLevel() never picks avx2

namespace tandem::kernels::cpu {
const QuantDotTable& avx2QuantDots() { return scalarQuantDots(); }
}  // namespace tandem::kernels::cpu

#endif
