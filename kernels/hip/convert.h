// Operands for the vendor BLAS (gpu_blas.h), made on the device: F32
// activations rounded to F16 or BF16 (to nearest even, as common/dtype.h),
// and block-quantized weights dequantized to F16 rows.
#pragma once

#include <cstdint>

#include "common/dtype.h"
#include "kernels/hip/gpu_vendor.h"

namespace tandem::kernels::hip {

// n F32 values of x into `to` (kF16 or kBF16) at out; eight values a
// thread where both are 16-byte aligned. hipErrorInvalidValue for another
// `to`.
hipError_t launchConvertF32(const float* x, int64_t n, DType to, void* out, hipStream_t stream);

// rows [n, k] of quantized `w_dtype` (q8_0, q4_0, q4_k, q6_k; k whole
// blocks) dequantized (quant_device.h, F32) and rounded to F16 into out
// [n, k] (16-byte aligned, as allocations are). hipErrorInvalidValue for
// another type or k not whole blocks.
hipError_t launchDequantizeF16(const void* w, DType w_dtype, int64_t n, int64_t k, uint16_t* out,
                               hipStream_t stream);

}  // namespace tandem::kernels::hip
