// The dot products of quant_dot.h with AVX512-VNNI: quant_dot_x86.h built
// with -mavx512f -mavx512bw -mavx512vl -mavx512vnni, its byte products one
// EVEX VPDPBUSD each (on 256-bit registers through AVX512-VL: a 32-value
// q8_0/q4_0 block is one register, and Zen 4 runs 512-bit integer ops as two
// 256-bit halves, so wider registers would not add throughput there).
// Handed out only where the processor reports avx512vnni.
#include "kernels/cpu/quant_dot.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <vector>

#include "common/quant_blocks.h"

namespace tandem::kernels::cpu {

namespace {

using namespace tandem::quant;

__m256i dpbusd(__m256i acc, __m256i u, __m256i s) { return _mm256_dpbusd_epi32(acc, u, s); }

constexpr bool kUnsignedAct32 = true;
constexpr bool kGroupedAct32 = true;
constexpr bool kTile32 = true;
constexpr bool kTile256 = true;
constexpr bool kPrefill32 = true;
constexpr bool kPrefill256 = true;
constexpr bool kGroupedAct256 = true;
#include "kernels/cpu/quant_dot_x86.h"

}  // namespace

const QuantDotTable& avx512VnniQuantDots() {
  static const QuantDotTable table = makeTable<16>(SimdLevel::kAvx512, true);
  return processorHasAvx512Vnni() ? table : avxVnniQuantDots();
}

}  // namespace tandem::kernels::cpu

#else

namespace tandem::kernels::cpu {
const QuantDotTable& avx512VnniQuantDots() { return avx2QuantDots(); }
}  // namespace tandem::kernels::cpu

#endif
