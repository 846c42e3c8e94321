// Matrix-vector products for decode: y = x * w^T (+ bias) for a handful of
// rows of x. Bandwidth-bound: every weight is read once for all rows. A
// group of lanes (sized to k: 4 for tiny rows, a whole wave for 4096) owns
// one output column, strides over k and reduces with shuffles inside the
// group, so short rows do not leave most of a wave idle.
#pragma once

#include <cstdint>

#include "common/dtype.h"
#include "kernels/hip/gpu_vendor.h"

namespace tandem::kernels::hip {

inline constexpr int kGemvMaxRows = 8;

// x [m, k] F32 with 1 <= m <= kGemvMaxRows, w [n, k] of `w_dtype`, bias [n]
// F32 or null, y [m, n] F32. hipErrorInvalidValue when m is out of range.
hipError_t launchGemv(const float* x, const void* w, DType w_dtype, const float* bias, float* y,
                      int64_t m, int64_t n, int64_t k, hipStream_t stream);

}  // namespace tandem::kernels::hip
