// Matrix multiply for prefill-sized batches with block-quantized weights
// (GGUF q8_0, q4_0, q4_k, q6_k): y = x * w^T (+ bias). Each weight tile is
// dequantized into LDS as F32 on its way in (eight values a thread,
// quant_device.h) and then multiplied by the tiled GEMM of gemm_tile.h, the
// same inner loop (and matrix instruction) as the dense weights of gemm.h.
// Decode-sized batches go to gemv_quant.h instead.
#pragma once

#include <cstdint>

#include "common/dtype.h"
#include "kernels/hip/gpu_vendor.h"

namespace tandem::kernels::hip {

// x [m, k] F32, w [n, k] of a quantized `w_dtype` (rows of whole blocks: k a
// multiple of the block size), bias [n] F32 or null, y [m, n] F32 (not
// aliasing x). Any m and n (edges are masked). hipErrorInvalidValue when
// w_dtype is not quantized or k is not whole blocks.
hipError_t launchGemmQuant(const float* x, const void* w, DType w_dtype, const float* bias,
                           float* y, int64_t m, int64_t n, int64_t k, hipStream_t stream);

}  // namespace tandem::kernels::hip
