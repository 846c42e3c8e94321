// RMSNorm: out[i, :] = x[i, :] / sqrt(mean(x[i, :]^2) + eps) * weight.
#pragma once

#include <cstdint>

#include "common/dtype.h"
#include "kernels/hip/gpu_vendor.h"

namespace tandem::kernels::hip {

// x, out [rows, dim] F32 (may alias), weight [dim] of `weight_dtype`.
hipError_t launchRmsNorm(const float* x, const void* weight, DType weight_dtype, int64_t rows,
                         int64_t dim, float eps, float* out, hipStream_t stream);

}  // namespace tandem::kernels::hip
