// The AVX2 dot products of quant_dot.h (compiled with -mavx2 -mfma -mf16c,
// called only when the processor has them): quant_dot_x86.h with byte
// products by _mm256_maddubs_epi16 (unsigned x signed, pairs summed to
// int16) widened with _mm256_madd_epi16: ggml's scheme.
#include "kernels/cpu/quant_dot.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <vector>

#include "common/quant_blocks.h"

namespace tandem::kernels::cpu {

namespace {

using namespace tandem::quant;

__m256i dpbusd(__m256i acc, __m256i u, __m256i s) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
}

constexpr bool kUnsignedAct32 = false;
constexpr bool kGroupedAct32 = true;
constexpr bool kTile32 = false;
// its q4_k tile ran 15% slower than these dots (quant_dot_bench --simd avx2 --k
// 768 --rows 16, bench/RESULTS.md "Q4_K tiles on the VNNI tables")
constexpr bool kTile256 = false;
// maddubs q8_0/q4_0 dots are no faster than the F32 gemm; the k-quants are
constexpr bool kPrefill32 = false;
constexpr bool kPrefill256 = true;
constexpr bool kGroupedAct256 = true;
#include "kernels/cpu/quant_dot_x86.h"

}  // namespace

const QuantDotTable& avx2QuantDots() {
  static const QuantDotTable single_row = makeTable<8, false>(SimdLevel::kAvx2, false);
  static const QuantDotTable table = makeTable<16>(SimdLevel::kAvx2, false, &single_row);
  return table;
}

}  // namespace tandem::kernels::cpu

#else  // not x86-64: detectSimdLevel() never picks avx2

namespace tandem::kernels::cpu {
const QuantDotTable& avx2QuantDots() { return scalarQuantDots(); }
}  // namespace tandem::kernels::cpu

#endif
