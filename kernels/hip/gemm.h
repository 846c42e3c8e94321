// Matrix multiply for prefill-sized batches: y = x * w^T (+ bias), with both
// operand tiles staged in LDS (weights converted to F32 on the way in). On
// waves of 64 the tile is computed with the 16x16x4 F32 matrix instruction
// (CDNA's MFMA; gpu_vendor.h), elsewhere with a portable 4x4 register tile
// per thread. Decode-sized batches go to gemv.h instead.
#pragma once

#include <cstdint>

#include "common/dtype.h"
#include "kernels/hip/gpu_vendor.h"

namespace tandem::kernels::hip {

// x [m, k] F32, w [n, k] of `w_dtype` (F32/F16/BF16), bias [n] F32 or null,
// y [m, n] F32 (not aliasing x). Any m, n, k (edges are masked).
hipError_t launchGemm(const float* x, const void* w, DType w_dtype, const float* bias, float* y,
                      int64_t m, int64_t n, int64_t k, hipStream_t stream);

}  // namespace tandem::kernels::hip
