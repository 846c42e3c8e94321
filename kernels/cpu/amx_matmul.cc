// Run-time detection of AMX-BF16 and the task split of amxMatmul, compiled
// with the baseline flags (amx_matmul.h).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/quant_blocks.h"
#include "kernels/cpu/amx_matmul.h"
#include "kernels/cpu/quant_amx.h"
#include "kernels/cpu/simd_level.h"

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace tandem::kernels::cpu {

namespace {

// TANDEM_CPU_AMX=0 (or off) turns the tiles off.
bool amxTurnedOff() {
  return environmentTurnsOff("TANDEM_CPU_AMX");
}

// CPUID leaf 7 EDX bit 25: AMX-INT8
bool cpuidHasAmxInt8() {
#if defined(__x86_64__) && defined(__linux__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0, nullptr) < 7) return false;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  return ((edx >> 25) & 1u) != 0;
#else
  return false;
#endif
}

bool detectAmxBf16() {
#if defined(__x86_64__) && defined(__linux__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0, nullptr) < 7) return false;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  const bool amx_bf16 = (edx >> 22) & 1u, amx_tile = (edx >> 24) & 1u;
  const bool avx512bw = (ebx >> 30) & 1u;
  if (!amx_bf16 || !amx_tile || !avx512bw) return false;
  // the kernel packs with AVX512-BF16 conversions (leaf 7, subleaf 1)
  __cpuid_count(7, 1, eax, ebx, ecx, edx);
  if (((eax >> 5) & 1u) == 0) return false;
  // the OS must save the tile state: OSXSAVE, then XCR0 bits 17 (XTILECFG)
  // and 18 (XTILEDATA).
  __cpuid(1, eax, ebx, ecx, edx);
  if (((ecx >> 27) & 1u) == 0) return false;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  // the OS must save the AVX-512 state too (XCR0 bits 5-7)
  if (((xcr0_lo >> 17) & 3u) != 3u || ((xcr0_lo >> 5) & 7u) != 7u) return false;
  // Linux (5.16+) hands out the large tile state only on request.
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

}  // namespace

bool amxBf16Usable() {
  static const bool usable = amxKernelBuilt() && !amxTurnedOff() && detectAmxBf16();
  return usable;
}

bool amxInt8Usable() {
  // the tile state, its permission and the off switch are AMX-BF16's
  static const bool usable = amxInt8KernelBuilt() && amxBf16Usable() && cpuidHasAmxInt8();
  return usable;
}

bool useAmxMatmul(const MatmulArgs& args) {
  if (args.m < kAmxMinRows || !amxBf16Usable()) return false;
  if (quant::isQuantized(args.w_dtype)) return args.k % quant::blockValues(args.w_dtype) == 0;
  return args.w_dtype == DType::kBF16 || args.w_dtype == DType::kF16 || args.w_dtype == DType::kF32;
}

void amxDequantizeRows(const MatmulArgs& a, int64_t n0, int rows, float* out) {
  const size_t row_bytes = rowBytes(a.w_dtype, static_cast<size_t>(a.k));
  const auto* w = static_cast<const char*>(a.w);
  for (int r = 0; r < rows; ++r) quant::dequantizeRow(a.w_dtype, w + (n0 + r) * row_bytes, out + r * a.k, a.k);
}

void amxMatmul(const MatmulArgs& a, int threads, const ParallelTasks& parallel) {
  if (a.m == 0 || a.n == 0) return;
  const int64_t kp = (a.k + 31) / 32 * 32;
  const int64_t mp = (a.m + 31) / 32 * 32;
  // the split x of the calling thread's last call, reused (no page faults
  // for a new buffer each matmul), from a 64-byte boundary: a tile row that
  // straddles two cache lines loads both
  thread_local std::vector<uint16_t> x_split;
  const int64_t part = (mp * kp + 31) / 32 * 32;
  const size_t need = static_cast<size_t>(kAmxXParts * part + 32);
  if (x_split.size() < need) x_split.resize(need);
  uint16_t* parts = reinterpret_cast<uint16_t*>((reinterpret_cast<uintptr_t>(x_split.data()) + 63) & ~uintptr_t{63});
  const int64_t wanted = int64_t{threads} * 4;
  const int64_t rows_per_task = std::max<int64_t>(1, (mp + wanted - 1) / wanted);
  parallel(static_cast<int>((mp + rows_per_task - 1) / rows_per_task), [&](int t) {
    const int64_t begin = t * rows_per_task;
    amxSplitRows(a.x, a.m, a.k, kp, begin, std::min(mp, begin + rows_per_task), parts, part);
  });
  // tasks of whole 32-row panels
  const int64_t panels = (a.n + 31) / 32;
  const int64_t per_task = std::max<int64_t>(1, panels / wanted);
  parallel(static_cast<int>((panels + per_task - 1) / per_task), [&](int t) {
    const int64_t begin = t * per_task * 32;
    amxPanels(a, parts, part, kp, begin, std::min(a.n, begin + per_task * 32));
  });
}

}  // namespace tandem::kernels::cpu
