// Matrix-vector products for decode with block-quantized weights (GGUF
// q8_0, q4_0, q4_k, q6_k): y = x * w^T (+ bias) for a handful of rows of x,
// as llama.cpp's MMVQ: x is first quantized to 8-bit blocks
// (quantize_act.h), then a block of four waves owns a few weight rows and
// its lanes take units of 32 packed values (quant_dot_device.h), each
// multiplied with every row of x through 4-way integer dot products, so each
// weight byte is read once for all rows and a weight costs about one
// instruction.
//
// Numerics: the result is the dequantized weights times x', x's round trip
// through the 8-bit blocks (quant_dot_device.h), in F32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "common/dtype.h"
#include "kernels/hip/gemv.h"
#include "kernels/hip/gpu_vendor.h"
#include "kernels/hip/quant_dot_device.h"

namespace tandem::kernels::hip {

// bytes of device workspace the quantized rows of x [m, k] take
// (launchQuantizeActQ8's output).
size_t gemvQuantWorkspace(int64_t m, int64_t k);

// acts: x [m, k] already quantized by launchQuantizeActQ8 (so several
// weights sharing x quantize it once), 1 <= m <= kGemvMaxRows; w [n, k] of a
// quantized `w_dtype` (rows of whole blocks: k a multiple of the block
// size; w 4-byte aligned, as allocations are), bias [n] F32 or null, y
// [m, n] F32. hipErrorInvalidValue when m is out of range, w_dtype is not
// quantized, k is not whole blocks or w is misaligned.
hipError_t launchGemvQuant(const gpu::ActQ8* acts, const void* w, DType w_dtype, const float* bias,
                           float* y, int64_t m, int64_t n, int64_t k, hipStream_t stream);

// several weights of `w_dtype` and width k sharing x: one launch for every
// kGemvMaxOutputs of them.
hipError_t launchGemvQuantOutputs(const gpu::ActQ8* acts, std::span<const GemvOutput> outputs,
                                  DType w_dtype, int64_t m, int64_t k, hipStream_t stream);

}  // namespace tandem::kernels::hip
