// The AVX2 kernels (with FMA and F16C). Compiled with -mavx2 -mfma -mf16c
// (see kernels/CMakeLists.txt) and only called when the processor has them.
#include "kernels/cpu/kernel_templates.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace tandem::kernels::cpu {

namespace {

struct Avx2Vec {
  using F = __m256;
  static constexpr int kWidth = 8;
  static constexpr int kGemmRows = 6;
  static constexpr int kGemmVecs = 2;
  static constexpr int kBatchTileW = 3;

  // lanes [0, n) set, for partial loads and stores at row ends.
  static __m256i mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static __m128i load16N(const uint16_t* p, int n) {
    alignas(16) uint16_t tmp[8] = {};
    std::memcpy(tmp, p, n * sizeof(uint16_t));
    return _mm_load_si128(reinterpret_cast<const __m128i*>(tmp));
  }
  static F bf16x8(__m128i h) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }

  static F zero() { return _mm256_setzero_ps(); }
  static F set1(float f) { return _mm256_set1_ps(f); }
  static F load(const float* p) { return _mm256_loadu_ps(p); }
  static F loadN(const float* p, int n) { return _mm256_maskload_ps(p, mask(n)); }
  static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
  static void storeN(float* p, F v, int n) { _mm256_maskstore_ps(p, mask(n), v); }
  static F loadF16(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static F loadF16N(const uint16_t* p, int n) { return _mm256_cvtph_ps(load16N(p, n)); }
  static F loadBf16(const uint16_t* p) {
    return bf16x8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static F loadBf16N(const uint16_t* p, int n) { return bf16x8(load16N(p, n)); }
  static __m128i f16x8(F v) { return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static void storeF16(uint16_t* p, F v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), f16x8(v)); }
  static void storeF16N(uint16_t* p, F v, int n) {
    alignas(16) uint16_t tmp[8];
    _mm_store_si128(reinterpret_cast<__m128i*>(tmp), f16x8(v));
    std::memcpy(p, tmp, n * sizeof(uint16_t));
  }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F div(F a, F b) { return _mm256_div_ps(a, b); }
  static F max(F a, F b) { return _mm256_max_ps(a, b); }
  static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static float hsum(F v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  // cephes expf: 2^n * p(r) with r = x - n ln2, |r| <= ln2 / 2.
  static F exp(F x) {
    x = _mm256_min_ps(_mm256_max_ps(x, set1(-87.3f)), set1(88.7f));
    const F n = _mm256_round_ps(_mm256_mul_ps(x, set1(1.44269504088896341f)),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    x = fma(n, set1(-0.693359375f), x);
    x = fma(n, set1(2.12194440e-4f), x);
    F p = set1(1.9875691500e-4f);
    p = fma(p, x, set1(1.3981999507e-3f));
    p = fma(p, x, set1(8.3334519073e-3f));
    p = fma(p, x, set1(4.1665795894e-2f));
    p = fma(p, x, set1(1.6666665459e-1f));
    p = fma(p, x, set1(5.0000001201e-1f));
    p = fma(p, _mm256_mul_ps(x, x), _mm256_add_ps(x, set1(1.0f)));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
  }
};

}  // namespace

const KernelTable& avx2Kernels() {
  static const KernelTable table = impl::makeKernelTable<Avx2Vec>(SimdLevel::kAvx2);
  return table;
}

}  // namespace tandem::kernels::cpu

#else  // not x86-64: detectSimdLevel() never picks this level

namespace tandem::kernels::cpu {
const KernelTable& avx2Kernels() { return scalarKernels(); }
}  // namespace tandem::kernels::cpu

#endif
