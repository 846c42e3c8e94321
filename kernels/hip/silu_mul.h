// SwiGLU's gate: out = silu(gate) * up, elementwise.
#pragma once

#include <cstdint>

#include "kernels/hip/gpu_vendor.h"

namespace tandem::kernels::hip {

// gate, up, out: n F32 each; out may alias either input.
hipError_t launchSiluMul(const float* gate, const float* up, int64_t n, float* out,
                         hipStream_t stream);

}  // namespace tandem::kernels::hip
