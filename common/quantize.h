// Float rows into GGUF's quantized blocks (common/quant_blocks.h): the
// writing side of dequantizeRow(), for `tandem model synth --dtype q8_0|q4_k_m`
// and for tests. q8_0 and q4_0 are ggml's reference quantizers
// (quantize_row_q8_0_ref / q4_0_ref) bit for bit; q4_k and q6_k use a simple
// min/max (resp. max-abs) scale per sub-block rather than llama.cpp's
// iterative search, so their bytes differ from llama-quantize's but decode
// with the same layout.
#pragma once

#include <cstdint>

#include "common/dtype.h"

namespace tandem::quant {

// `n` floats (a multiple of blockValues(t)) into the blocks of type t at
// `dst` (rowBytes(t, n) bytes). t must be q8_0, q4_0, q4_k or q6_k.
void quantizeRow(DType t, const float* src, void* dst, int64_t n);

}  // namespace tandem::quant
