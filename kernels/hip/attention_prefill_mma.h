// Paged attention for prefill chunks on the matrix cores: flash attention in
// two passes over the keys (softmax statistics, then P V), S = Q K^T and O =
// P V as 16x16x16 products of 16-bit operands (gpu::mma::Tiles: wmma on
// NVIDIA, MFMA on CDNA, the emulator's model of both), F32 sums. For F16 and
// BF16 caches (the operands' type) and head_dim a multiple of 16 up to 128;
// attention_prefill.h's kernel takes the rest.
//
// Numerics: q * scale and the probabilities are rounded to the cache's type
// (the keys and values already are); sums are F32 (the reference for tests:
// kernels/reference/operand_rounding.h).
#pragma once

#include "kernels/hip/attention_prefill.h"
#include "kernels/hip/gpu_vendor.h"

namespace tandem::kernels::hip {

// whether launchAttentionPrefillMma takes this batch on this device.
bool attentionPrefillMmaShape(const AttentionArgs& args);

// as launchAttentionPrefill; hipErrorInvalidValue when
// !attentionPrefillMmaShape(args) or the heads do not divide.
hipError_t launchAttentionPrefillMma(const AttentionArgs& args, hipStream_t stream);

}  // namespace tandem::kernels::hip
