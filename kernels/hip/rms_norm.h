// RMSNorm: out[i, :] = x[i, :] / sqrt(mean(x[i, :]^2) + eps) * weight; and
// fused with the residual add before it (x += delta, then the norm of x),
// one launch for the two with the same numbers.
#pragma once

#include <cstdint>

#include "common/dtype.h"
#include "kernels/hip/gpu_vendor.h"

namespace tandem::kernels::hip {

// x, out [rows, dim] F32 (may alias), weight [dim] of `weight_dtype`.
hipError_t launchRmsNorm(const float* x, const void* weight, DType weight_dtype, int64_t rows,
                         int64_t dim, float eps, float* out, hipStream_t stream);

// x += delta, then out = RMSNorm(x) * weight: x, delta, out [rows, dim] F32
// (out may alias delta, not x). The same bits as launchResidualAdd then
// launchRmsNorm.
hipError_t launchAddRmsNorm(float* x, const float* delta, const void* weight, DType weight_dtype,
                            int64_t rows, int64_t dim, float eps, float* out, hipStream_t stream);

}  // namespace tandem::kernels::hip
