// What the hip backend's matmuls do to their operands before the F32 sums,
// as host code, so a reference can see the same operands (the parity tests
// in tests/kernels and the GPU check in bench/gpu):
//  - decode rows against quantized weights go through 8-bit activation
//    blocks (kernels/hip/quantize_act.h): per group of 32 or 256 values
//    d = max|x| / 127 (rounded to F16 for 32), x' = d * rint(x * 127 / max|x|);
//  - prefill rows on the vendor BLAS are rounded to F16 / BF16 (and
//    quantized weights, dequantized, to F16).
// And block-quantized test weights: random bytes with scales that keep
// every weight within about [-1, 1].
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "common/dtype.h"

namespace tandem::kernels {

// x[0, n) (n a multiple of `group`: 32 or 256) through the 8-bit activation
// blocks, in place.
void roundTripActQ8(float* x, int64_t n, int group);

// x[0, n) rounded to `dtype` (F16 or BF16, to nearest even) and back, in place.
void roundTo16Bit(float* x, int64_t n, DType dtype);

// the bytes of a [rows, cols] weight of quantized `dtype` (cols whole
// blocks): random bytes, with each block's f16 scales drawn so that every
// weight stays within about [-1, 1]; every nibble, high bit and packed scale
// is random, so a kernel reading one from the wrong place fails by far.
std::vector<char> randomQuantBlocks(DType dtype, int64_t rows, int64_t cols, std::mt19937& rng);

}  // namespace tandem::kernels
