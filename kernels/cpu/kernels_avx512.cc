// The AVX-512 kernels (F, BW, VL). Compiled with -mavx512f -mavx512bw
// -mavx512vl -mfma -mf16c (see kernels/CMakeLists.txt) and only called when
// the processor has them.
#include "kernels/cpu/kernel_templates.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace tandem::kernels::cpu {

namespace {

struct Avx512Vec {
  using F = __m512;
  static constexpr int kWidth = 16;
  static constexpr int kGemmRows = 12;
  static constexpr int kGemmVecs = 2;
  static constexpr int kBatchTileW = 4;

  static __mmask16 mask(int n) { return static_cast<__mmask16>((1u << n) - 1); }
  static F bf16x16(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }

  static F zero() { return _mm512_setzero_ps(); }
  static F set1(float f) { return _mm512_set1_ps(f); }
  static F load(const float* p) { return _mm512_loadu_ps(p); }
  static F loadN(const float* p, int n) { return _mm512_maskz_loadu_ps(mask(n), p); }
  static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  static void storeN(float* p, F v, int n) { _mm512_mask_storeu_ps(p, mask(n), v); }
  // 16 halves are loaded at once (32 bytes) and widened as two 256-bit
  // halves joined, not by one widening to 512 bits (vcvtph2ps zmm,
  // vpmovzxwd zmm): streaming 16-bit weights from memory, the 512-bit
  // widenings ran decode's gemv 30% (f16) to 45% (bf16) slower than the
  // AVX2 kernels on Zen 4; this form is as fast as AVX2 or faster
  // (bench/RESULTS.md, issue 20). Loading each half on its own (two 16-byte
  // loads) measured 10-15% slower again for f16. On an Intel Xeon it is the
  // other way round (Avx512WideVec below).
  static F join(__m256 lo, __m256 hi) {
    // vinsertf64x4 is AVX512F (vinsertf32x8 would need DQ)
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)),
                                               _mm256_castps_pd(hi), 1));
  }
  static __m256i load16(const uint16_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  }
  static __m128i hi8(__m256i h) { return _mm256_extracti128_si256(h, 1); }
  static __m256 bf16x8(__m128i h) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static F loadF16(const uint16_t* p) {
    const __m256i h = load16(p);
    return join(_mm256_cvtph_ps(_mm256_castsi256_si128(h)), _mm256_cvtph_ps(hi8(h)));
  }
  static F loadF16N(const uint16_t* p, int n) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask(n), p));
  }
  static F loadBf16(const uint16_t* p) {
    const __m256i h = load16(p);
    return join(bf16x8(_mm256_castsi256_si128(h)), bf16x8(hi8(h)));
  }
  static F loadBf16N(const uint16_t* p, int n) { return bf16x16(_mm256_maskz_loadu_epi16(mask(n), p)); }
  static __m256i f16x16(F v) { return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static void storeF16(uint16_t* p, F v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), f16x16(v)); }
  static void storeF16N(uint16_t* p, F v, int n) { _mm256_mask_storeu_epi16(p, mask(n), f16x16(v)); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F div(F a, F b) { return _mm512_div_ps(a, b); }
  static F max(F a, F b) { return _mm512_max_ps(a, b); }
  static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static float hsum(F v) { return _mm512_reduce_add_ps(v); }
  // cephes expf: 2^n * p(r) with r = x - n ln2, |r| <= ln2 / 2.
  static F exp(F x) {
    x = _mm512_min_ps(_mm512_max_ps(x, set1(-87.3f)), set1(88.7f));
    const F n = _mm512_roundscale_ps(_mm512_mul_ps(x, set1(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    x = fma(n, set1(-0.693359375f), x);
    x = fma(n, set1(2.12194440e-4f), x);
    F p = set1(1.9875691500e-4f);
    p = fma(p, x, set1(1.3981999507e-3f));
    p = fma(p, x, set1(8.3334519073e-3f));
    p = fma(p, x, set1(4.1665795894e-2f));
    p = fma(p, x, set1(1.6666665459e-1f));
    p = fma(p, x, set1(5.0000001201e-1f));
    p = fma(p, _mm512_mul_ps(x, x), _mm512_add_ps(x, set1(1.0f)));
    return _mm512_scalef_ps(p, n);
  }
};

// 16-bit weights widened by one 512-bit conversion: on an Intel Xeon the joined
// halves' three port-5 shuffles and conversions a vector bound decode's gemv,
// which this form runs 18% (bf16) to 23% (f16) faster (model_runner_bench
// --threads 2: bench/RESULTS.md "the whole table on the Intel Xeon with AMX").
struct Avx512WideVec : Avx512Vec {
  static F loadF16(const uint16_t* p) { return _mm512_cvtph_ps(load16(p)); }
  static F loadBf16(const uint16_t* p) { return bf16x16(load16(p)); }
};

}  // namespace

const KernelTable& avx512KernelsWidening(bool joined_halves) {
  static const KernelTable joined = impl::makeKernelTable<Avx512Vec>(SimdLevel::kAvx512);
  static const KernelTable wide = impl::makeKernelTable<Avx512WideVec>(SimdLevel::kAvx512);
  return joined_halves ? joined : wide;
}

const KernelTable& avx512Kernels() { return avx512KernelsWidening(processorSplits512BitOps()); }

}  // namespace tandem::kernels::cpu

#else  // not x86-64: detectSimdLevel() never picks this level

namespace tandem::kernels::cpu {
const KernelTable& avx512KernelsWidening(bool) { return scalarKernels(); }
const KernelTable& avx512Kernels() { return scalarKernels(); }
}  // namespace tandem::kernels::cpu

#endif
