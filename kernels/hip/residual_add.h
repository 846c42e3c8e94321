// The residual connection: out = a + b, elementwise; and a bias added to
// every row of a matmul's output (the vendor BLAS's path, gpu_blas.h).
#pragma once

#include <cstdint>

#include "kernels/hip/gpu_vendor.h"

namespace tandem::kernels::hip {

// a, b, out: n F32 each; out may alias either input.
hipError_t launchResidualAdd(const float* a, const float* b, int64_t n, float* out,
                             hipStream_t stream);

// y [m, n] F32 += bias [n] on every row.
hipError_t launchAddBias(float* y, const float* bias, int64_t m, int64_t n, hipStream_t stream);

}  // namespace tandem::kernels::hip
