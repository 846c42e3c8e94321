#include "bench/kernels/int8_roof.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tandem::bench {
namespace {

constexpr long kIterations = 20'000'000;
// independent accumulators a loop step: more than latency x ports of the
// instructions timed (5 x 2), few enough to stay in AVX2's 16 registers
constexpr int kChains = 12;

// best GMAC/s of `reps` calls of loop(), which issues kIterations x
// kChains instructions of `macs` MACs each.
double best(int reps, int macs, void (*loop)()) {
  double best_s = 0.0;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    loop();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best_s = r == 0 ? s : std::min(best_s, s);
  }
  return static_cast<double>(kIterations) * kChains * macs / best_s / 1e9;
}

}  // namespace

#if defined(__x86_64__)

// NAME(): kIterations steps of OP on 12 accumulators of type T, built
// for TARGET. The accumulators are named variables (an array of them was
// kept in memory by GCC 12, timing the stores), start distinct (so no two
// chains are one to the compiler), and `u` is opaque each step so nothing
// is hoisted; C is their asm register constraint.
#define TANDEM_ROOF_LOOP(NAME, TARGET, T, SET32, SET8, OP, C)                                 \
  __attribute__((target(TARGET))) void NAME() {                                              \
    T a0 = SET32(0), a1 = SET32(1), a2 = SET32(2), a3 = SET32(3), a4 = SET32(4), a5 = SET32(5); \
    T a6 = SET32(6), a7 = SET32(7), a8 = SET32(8), a9 = SET32(9), a10 = SET32(10);           \
    T a11 = SET32(11), u = SET8(3);                                                          \
    const T s = SET8(5);                                                                     \
    for (long i = 0; i < kIterations; ++i) {                                                 \
      __asm__ volatile("" : "+" C(u));                                                       \
      a0 = OP(a0, u, s), a1 = OP(a1, u, s), a2 = OP(a2, u, s), a3 = OP(a3, u, s);            \
      a4 = OP(a4, u, s), a5 = OP(a5, u, s), a6 = OP(a6, u, s), a7 = OP(a7, u, s);            \
      a8 = OP(a8, u, s), a9 = OP(a9, u, s), a10 = OP(a10, u, s), a11 = OP(a11, u, s);        \
    }                                                                                        \
    __asm__ volatile("" : : C(a0), C(a1), C(a2), C(a3), C(a4), C(a5));                       \
    __asm__ volatile("" : : C(a6), C(a7), C(a8), C(a9), C(a10), C(a11));                     \
  }

namespace {

// maddubs then an int16 add into the chain, as the AVX2 dots sum pairs;
// the chain's own value is the unsigned operand (u would be one maddubs
// for all chains)
__attribute__((target("avx2"))) inline __m256i maddubsAdd(__m256i acc, __m256i, __m256i s) {
  return _mm256_add_epi16(acc, _mm256_maddubs_epi16(acc, s));
}

TANDEM_ROOF_LOOP(ymmVnniLoop, "avx2,avxvnni", __m256i, _mm256_set1_epi32, _mm256_set1_epi8,
                 _mm256_dpbusd_avx_epi32, "x")
TANDEM_ROOF_LOOP(zmmVnniLoop, "avx512f,avx512bw,avx512vnni", __m512i, _mm512_set1_epi32, _mm512_set1_epi8,
                 _mm512_dpbusd_epi32, "v")
TANDEM_ROOF_LOOP(ymmMaddubsLoop, "avx2", __m256i, _mm256_set1_epi32, _mm256_set1_epi8, maddubsAdd, "x")

}  // namespace

double roofVpdpbusdYmm(int reps) {
  return __builtin_cpu_supports("avxvnni") ? best(reps, 32, ymmVnniLoop) : 0.0;
}
double roofVpdpbusdZmm(int reps) {
  return __builtin_cpu_supports("avx512vnni") ? best(reps, 64, zmmVnniLoop) : 0.0;
}
double roofMaddubsYmm(int reps) {
  return __builtin_cpu_supports("avx2") ? best(reps, 32, ymmMaddubsLoop) : 0.0;
}

#else

double roofVpdpbusdYmm(int) { return 0.0; }
double roofVpdpbusdZmm(int) { return 0.0; }
double roofMaddubsYmm(int) { return 0.0; }

#endif

}  // namespace tandem::bench
