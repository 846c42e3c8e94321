// Matrix-vector products for decode: y = x * w^T (+ bias) for a handful of
// rows of x. Bandwidth-bound: every weight is read once for all rows. Rows
// of whole 16-byte chunks (k % 8 == 0, aligned) take the vector kernel: a
// wave owns 1-4 weight rows, each lane reads 16 bytes at a time with several
// loads in flight; any other shape a general kernel whose lane groups (4
// lanes up to a wave, sized to k) own one output column each.
#pragma once

#include <cstdint>

#include "common/dtype.h"
#include <span>

#include "kernels/hip/gemv_outputs.h"
#include "kernels/hip/gemv_rows.h"
#include "kernels/hip/gpu_vendor.h"

namespace tandem::kernels::hip {

// x [m, k] F32 with 1 <= m <= kGemvMaxRows, w [n, k] of `w_dtype`, bias [n]
// F32 or null, y [m, n] F32. hipErrorInvalidValue when m is out of range.
hipError_t launchGemv(const float* x, const void* w, DType w_dtype, const float* bias, float* y,
                      int64_t m, int64_t n, int64_t k, hipStream_t stream);

// several weights of `w_dtype` and width k sharing x: one launch for every
// kGemvMaxOutputs of them (where k % 8 == 0 and all are 16-byte aligned;
// else a launch each).
hipError_t launchGemvOutputs(const float* x, std::span<const GemvOutput> outputs, DType w_dtype,
                             int64_t m, int64_t k, hipStream_t stream);

}  // namespace tandem::kernels::hip
