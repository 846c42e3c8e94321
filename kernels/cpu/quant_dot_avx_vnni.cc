// The dot products of quant_dot.h with AVX-VNNI (VEX VPDPBUSD on 256 bits;
// processors with AVX2 but not AVX-512, e.g. Intel since Alder Lake):
// quant_dot_x86.h built with -mavx2 -mfma -mf16c -mavxvnni, handed out only
// where the processor reports avxvnni.
#include "kernels/cpu/quant_dot.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <vector>

#include "common/quant_blocks.h"

namespace tandem::kernels::cpu {

namespace {

using namespace tandem::quant;

__m256i dpbusd(__m256i acc, __m256i u, __m256i s) { return _mm256_dpbusd_avx_epi32(acc, u, s); }

// the AVX512-VNNI table's layouts, tiles and prefill on 256 bits, 16 rows a dot
// call (kDotRows). Measured on an Intel Xeon with avxvnni (quant_dot_bench
// --rows 16 and engine_vs_llamacpp.sh, bench/RESULTS.md "the AVX2 level's
// quantized dots (AVX-VNNI and maddubs)") against this table's first form (4
// rows, ungrouped, no tiles, prefill on dequantized panels and the dense gemm):
// 16-row dots q8_0 44 -> 82-87 GMAC/s (88 as tiles), q4_k 49 -> 97, q6_k 47 ->
// 82; pp512 q8_0 860 -> 1490, q4_k_m 856 -> 1282 tok/s.
constexpr bool kUnsignedAct32 = true;
constexpr bool kGroupedAct32 = true;
constexpr bool kTile32 = true;
constexpr bool kTile256 = true;
constexpr bool kPrefill32 = true;
constexpr bool kPrefill256 = true;
constexpr bool kGroupedAct256 = true;
#include "kernels/cpu/quant_dot_x86.h"

}  // namespace

const QuantDotTable& avxVnniQuantDots() {
  static const QuantDotTable table = makeTable<16>(SimdLevel::kAvx2, true);
  return processorHasAvxVnni() ? table : avx2QuantDots();
}

}  // namespace tandem::kernels::cpu

#else

namespace tandem::kernels::cpu {
const QuantDotTable& avxVnniQuantDots() { return avx2QuantDots(); }
}  // namespace tandem::kernels::cpu

#endif
