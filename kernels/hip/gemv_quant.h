// Matrix-vector products for decode with block-quantized weights (GGUF
// q8_0, q4_0, q4_k, q6_k): y = x * w^T (+ bias) for a handful of rows of x,
// dequantizing in registers. Like gemv.h a group of lanes owns one output
// column; each lane takes eight values of the packed row at a time
// (quant_device.h), converts them to F32 and accumulates every row of x,
// so each weight byte is read once for all rows.
#pragma once

#include <cstdint>

#include "common/dtype.h"
#include "kernels/hip/gemv.h"
#include "kernels/hip/gpu_vendor.h"

namespace tandem::kernels::hip {

// x [m, k] F32 with 1 <= m <= kGemvMaxRows, w [n, k] of a quantized
// `w_dtype` (rows of whole blocks: k a multiple of the block size), bias [n]
// F32 or null, y [m, n] F32. hipErrorInvalidValue when m is out of range,
// w_dtype is not quantized or k is not whole blocks.
hipError_t launchGemvQuant(const float* x, const void* w, DType w_dtype, const float* bias,
                           float* y, int64_t m, int64_t n, int64_t k, hipStream_t stream);

}  // namespace tandem::kernels::hip
