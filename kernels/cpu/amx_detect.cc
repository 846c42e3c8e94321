// Run-time detection of AMX-BF16, compiled with the baseline flags.
#include <cstdlib>
#include <cstring>

#include "kernels/cpu/amx_matmul.h"

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace tandem::kernels::cpu {

namespace {

enum class AmxMode { kOff, kBf16Weights, kAll };

AmxMode amxMode() {
  const char* env = std::getenv("TANDEM_CPU_AMX");
  if (env == nullptr || *env == '\0') return AmxMode::kBf16Weights;
  if (std::strcmp(env, "0") == 0 || std::strcmp(env, "off") == 0) return AmxMode::kOff;
  if (std::strcmp(env, "all") == 0) return AmxMode::kAll;
  return AmxMode::kBf16Weights;
}

bool detectAmxBf16() {
#if defined(__x86_64__) && defined(__linux__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0, nullptr) < 7) return false;
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  const bool amx_bf16 = (edx >> 22) & 1u, amx_tile = (edx >> 24) & 1u;
  if (!amx_bf16 || !amx_tile) return false;
  // the OS must save the tile state: OSXSAVE, then XCR0 bits 17 (XTILECFG)
  // and 18 (XTILEDATA).
  __cpuid(1, eax, ebx, ecx, edx);
  if (((ecx >> 27) & 1u) == 0) return false;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if (((xcr0_lo >> 17) & 3u) != 3u) return false;
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
  static const bool usable = amxKernelBuilt() && amxMode() != AmxMode::kOff && detectAmxBf16();
  return usable;
}

bool useAmxMatmul(const MatmulArgs& args) {
  if (args.m < kAmxMinRows || !amxBf16Usable()) return false;
  if (args.w_dtype == DType::kBF16) return true;
  static const bool all = amxMode() == AmxMode::kAll;
  return all && (args.w_dtype == DType::kF16 || args.w_dtype == DType::kF32);
}

}  // namespace tandem::kernels::cpu
