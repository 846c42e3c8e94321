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

constexpr bool kUnsignedAct32 = true;
constexpr bool kGroupedAct32 = false;
constexpr bool kTile32 = false;
// off: measured on an Intel Xeon with avxvnni (bench/RESULTS.md, session
// 32), prefill on these 4-row dots ran no faster than the dense gemm on
// dequantized panels (pp512 q8_0 787 vs 787, q4_k_m 812 vs 795 tok/s)
constexpr bool kPrefill32 = false;
constexpr bool kPrefill256 = false;
constexpr bool kGroupedAct256 = false;
#include "kernels/cpu/quant_dot_x86.h"

}  // namespace

const QuantDotTable& avxVnniQuantDots() {
  static const QuantDotTable table = makeTable<4>(SimdLevel::kAvx2, true);
  return processorHasAvxVnni() ? table : avx2QuantDots();
}

}  // namespace tandem::kernels::cpu

#else

namespace tandem::kernels::cpu {
const QuantDotTable& avxVnniQuantDots() { return avx2QuantDots(); }
}  // namespace tandem::kernels::cpu

#endif
