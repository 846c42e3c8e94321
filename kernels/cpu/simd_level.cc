#include "kernels/cpu/simd_level.h"

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"

namespace tandem::kernels::cpu {

SimdLevel detectSimdLevel() {
#if !defined(__x86_64__)
  return SimdLevel::kScalar;
#else
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma")) {
    return SimdLevel::kAvx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("f16c")) {
    return SimdLevel::kAvx2;
  }
  return SimdLevel::kScalar;
#endif
}

bool processorSplits512BitOps() {
#if !defined(__x86_64__)
  return false;
#else
  __builtin_cpu_init();
  return __builtin_cpu_is("amd");
#endif
}

std::string_view simdLevelName(SimdLevel level) {
  switch (level) {
    case SimdLevel::kScalar: return "scalar";
    case SimdLevel::kAvx2: return "avx2";
    case SimdLevel::kAvx512: return "avx512";
  }
  return "?";
}

absl::StatusOr<SimdLevel> parseSimdLevel(std::string_view name) {
  for (SimdLevel l : {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    if (name == simdLevelName(l)) return l;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown simd level '", std::string(name), "' (want scalar, avx2 or avx512)"));
}

bool environmentTurnsOff(const char* name) {
  const char* env = std::getenv(name);
  return env != nullptr && (std::string_view(env) == "0" || std::string_view(env) == "off");
}

}  // namespace tandem::kernels::cpu
