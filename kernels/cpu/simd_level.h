// Which vector instruction set the cpu backend's kernels use. Chosen at run
// time from what the processor reports, so one binary runs everywhere; tests
// force lower levels to cover every path on one machine.
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"

namespace tandem::kernels::cpu {

enum class SimdLevel : uint8_t {
  kScalar,  // portable C++; the compiler's baseline flags only
  kAvx2,    // AVX2 + FMA + F16C
  kAvx512,  // AVX-512 F/BW/VL (+ FMA, F16C)
};

// the best level this processor supports.
SimdLevel detectSimdLevel();
// whether the processor runs 512-bit operations as two 256-bit halves (AMD
// Zen 4, the AMD cores with AVX-512 so far), which changes which AVX-512
// code is the faster (kernel_table.h, avx512KernelsWidening).
bool processorSplits512BitOps();
std::string_view simdLevelName(SimdLevel level);
// "scalar", "avx2" or "avx512"; InvalidArgument otherwise.
absl::StatusOr<SimdLevel> parseSimdLevel(std::string_view name);
// whether the environment variable `name` is "0" or "off": the switches
// that turn an instruction set off (TANDEM_CPU_AMX, TANDEM_CPU_VNNI).
bool environmentTurnsOff(const char* name);

}  // namespace tandem::kernels::cpu
