// Row gather: out[i, :] = x[rows[i], :] (the rows that need logits).
#pragma once

#include <cstdint>

#include "kernels/hip/gpu_vendor.h"

namespace tandem::kernels::hip {

// x [num_x_rows, cols] F32, rows [n] I32, out [n, cols] F32. A row index
// outside [0, num_x_rows) gives a row of NaN.
hipError_t launchGatherRows(const float* x, int64_t num_x_rows, int64_t cols, const int32_t* rows,
                            int64_t n, float* out, hipStream_t stream);

}  // namespace tandem::kernels::hip
