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

// the accumulators as named variables (an array of them was kept in memory
// by GCC 12, timing the stores); `u` is opaque each step so nothing is hoisted.
#define TANDEM_ROOF_STEP(OP)                                                                \
  a0 = OP(a0, u, s), a1 = OP(a1, u, s), a2 = OP(a2, u, s), a3 = OP(a3, u, s);               \
  a4 = OP(a4, u, s), a5 = OP(a5, u, s), a6 = OP(a6, u, s), a7 = OP(a7, u, s);               \
  a8 = OP(a8, u, s), a9 = OP(a9, u, s), a10 = OP(a10, u, s), a11 = OP(a11, u, s)
// distinct starting values, so no two chains are one to the compiler
#define TANDEM_ROOF_ACCUMULATORS(T, SET1)                                                    \
  T a0 = SET1(0), a1 = SET1(1), a2 = SET1(2), a3 = SET1(3), a4 = SET1(4), a5 = SET1(5);      \
  T a6 = SET1(6), a7 = SET1(7), a8 = SET1(8), a9 = SET1(9), a10 = SET1(10), a11 = SET1(11)
#define TANDEM_ROOF_SINK(C)                                                                  \
  __asm__ volatile("" : : C(a0), C(a1), C(a2), C(a3), C(a4), C(a5));                         \
  __asm__ volatile("" : : C(a6), C(a7), C(a8), C(a9), C(a10), C(a11))

namespace {

__attribute__((target("avx2,avxvnni"))) void ymmVnniLoop() {
  TANDEM_ROOF_ACCUMULATORS(__m256i, _mm256_set1_epi32);
  __m256i u = _mm256_set1_epi8(3);
  const __m256i s = _mm256_set1_epi8(5);
  for (long i = 0; i < kIterations; ++i) {
    __asm__ volatile("" : "+x"(u));
    TANDEM_ROOF_STEP(_mm256_dpbusd_avx_epi32);
  }
  TANDEM_ROOF_SINK("x");
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) void zmmVnniLoop() {
  TANDEM_ROOF_ACCUMULATORS(__m512i, _mm512_set1_epi32);
  __m512i u = _mm512_set1_epi8(3);
  const __m512i s = _mm512_set1_epi8(5);
  for (long i = 0; i < kIterations; ++i) {
    __asm__ volatile("" : "+v"(u));
    TANDEM_ROOF_STEP(_mm512_dpbusd_epi32);
  }
  TANDEM_ROOF_SINK("v");
}

// maddubs then an int16 add into the chain, as the AVX2 dots sum pairs;
// the chain's own value is the unsigned operand (u would be one maddubs
// for all chains)
__attribute__((target("avx2"))) inline __m256i maddubsAdd(__m256i acc, __m256i, __m256i s) {
  return _mm256_add_epi16(acc, _mm256_maddubs_epi16(acc, s));
}

__attribute__((target("avx2"))) void ymmMaddubsLoop() {
  TANDEM_ROOF_ACCUMULATORS(__m256i, _mm256_set1_epi16);
  __m256i u = _mm256_set1_epi8(3);
  const __m256i s = _mm256_set1_epi8(5);
  for (long i = 0; i < kIterations; ++i) {
    __asm__ volatile("" : "+x"(u));
    TANDEM_ROOF_STEP(maddubsAdd);
  }
  TANDEM_ROOF_SINK("x");
}

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
