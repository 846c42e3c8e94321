// Token embedding lookup: out[i, :] = table[ids[i], :] as F32.
#pragma once

#include <cstdint>

#include "common/dtype.h"
#include "kernels/hip/gpu_vendor.h"

namespace tandem::kernels::hip {

// table [vocab, dim] of `dtype` (F32/F16/BF16), ids [n] I32 in [0, vocab),
// out [n, dim] F32; all device memory. An id outside [0, vocab) gives a row of
// NaN rather than a read out of bounds.
hipError_t launchEmbedding(const void* table, DType dtype, int64_t vocab, int64_t dim,
                           const int32_t* ids, int64_t n, float* out, hipStream_t stream);

}  // namespace tandem::kernels::hip
