// Activations to 8-bit blocks for the integer dot products of the quantized
// GEMVs (quant_dot_device.h): each 32 consecutive values of a row of x
// become an ActQ8 block, q = round(x / d) with d = max|x| / 127 (a block of
// zeros: d = 0, q = 0), s = d * sum(q).
#pragma once

#include <cstdint>

#include "kernels/hip/gpu_vendor.h"
#include "kernels/hip/quant_dot_device.h"

namespace tandem::kernels::hip {

// x [m, k] F32 (k a multiple of 32) into out [m, k / 32] blocks.
// hipErrorInvalidValue when k is not a multiple of 32.
hipError_t launchQuantizeActQ8(const float* x, int64_t m, int64_t k, gpu::ActQ8* out,
                               hipStream_t stream);

}  // namespace tandem::kernels::hip
