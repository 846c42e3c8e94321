// RMSNorm: out[i, :] = x[i, :] / sqrt(mean(x[i, :]^2) + eps) * weight; and
// fused with the residual add before it (x += delta, then the norm of x),
// one launch for the two with the same numbers.
#pragma once

#include <cstdint>

#include "common/dtype.h"
#include "kernels/hip/gpu_vendor.h"

namespace tandem::kernels::hip {

// x [rows, dim] F32, weight [dim] of `weight_dtype`, out [rows, dim] of
// `out_dtype` (F32, or F16/BF16: the F32 result rounded, for a GEMM's
// 16-bit operand); an F32 out may alias x.
hipError_t launchRmsNorm(const float* x, const void* weight, DType weight_dtype, int64_t rows,
                         int64_t dim, float eps, void* out, DType out_dtype, hipStream_t stream);

// x += delta, then out = RMSNorm(x) * weight: x, delta [rows, dim] F32, out
// as launchRmsNorm's (it may alias delta, not x). The same bits as
// launchResidualAdd then launchRmsNorm.
hipError_t launchAddRmsNorm(float* x, const float* delta, const void* weight, DType weight_dtype,
                            int64_t rows, int64_t dim, float eps, void* out, DType out_dtype,
                            hipStream_t stream);

}  // namespace tandem::kernels::hip
