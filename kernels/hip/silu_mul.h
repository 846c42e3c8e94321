// SwiGLU's gate: out = silu(gate) * up, elementwise.
#pragma once

#include <cstdint>

#include "common/dtype.h"
#include "kernels/hip/gpu_vendor.h"

namespace tandem::kernels::hip {

// gate, up: n F32 each; out: n of `out_dtype` (F32, or F16/BF16: the F32
// result rounded, for a GEMM's 16-bit operand); an F32 out may alias either
// input.
hipError_t launchSiluMul(const float* gate, const float* up, int64_t n, void* out, DType out_dtype,
                         hipStream_t stream);

}  // namespace tandem::kernels::hip
