// Activations to 8-bit blocks for the integer dot products of the quantized
// GEMVs (quant_dot_device.h), as llama.cpp's CPU quantizes them for the same
// weights (its oracles are what the quantized models are checked against):
// each `group` consecutive values of a row of x share a scale
// (quant::activationGroup of the weights' type),
// d = max|x| / 127, q = round-half-even(x * (127 / max|x|)) (a group of zeros:
// d = 0, q = 0).
//  - group 32 (q8_0, q4_0 weights: ggml's block_q8_0): d rounded to F16;
//  - group 256 (q4_k, q6_k weights: ggml's block_q8_K): d kept in F32.
// Either way the output is ActQ8 blocks of 32 values (those of a 256-group
// repeat its d), with s = d * sum(q) of each block.
#pragma once

#include <cstdint>

#include "kernels/hip/gpu_vendor.h"
#include "kernels/hip/quant_dot_device.h"

namespace tandem::kernels::hip {

// x [m, k] F32 (k a multiple of `group`) into out [m, k / 32] blocks.
// hipErrorInvalidValue when group is not 32 or 256 or does not divide k.
hipError_t launchQuantizeActQ8(const float* x, int64_t m, int64_t k, int group, gpu::ActQ8* out,
                               hipStream_t stream);

}  // namespace tandem::kernels::hip
