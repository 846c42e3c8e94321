// The residual connection: out = a + b, elementwise.
#pragma once

#include <cstdint>

#include "kernels/hip/gpu_vendor.h"

namespace tandem::kernels::hip {

// a, b, out: n F32 each; out may alias either input.
hipError_t launchResidualAdd(const float* a, const float* b, int64_t n, float* out,
                             hipStream_t stream);

}  // namespace tandem::kernels::hip
