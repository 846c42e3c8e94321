// Paged attention for prefill chunks, flash-attention style: a block takes
// 16 query rows of one head and streams the sequence's keys and values
// through LDS 32 positions at a time (gathered from the paged cache through
// the block table), with an online softmax, so no score matrix is ever
// materialised. Causal inside the chunk; the cached prefix [0, start_pos) is
// visible to every row. Handles decode rows (q_len 1) too, and any GQA ratio.
#pragma once

#include <cstdint>

#include "kernels/hip/gpu_vendor.h"
#include "kernels/hip/kv_cache.h"

namespace tandem::kernels::hip {

inline constexpr int kAttentionMaxHeadDim = 128;

// the batch as kernels::AttentionBatch describes it (seq_info [num_seqs][4]
// = q_row, q_len, start_pos, table_offset; block_tables flat), all device.
struct AttentionArgs {
  const float* q = nullptr;  // [tokens, num_heads * head_dim]
  const void* cache = nullptr;
  KvShape shape;
  int num_kv_heads = 0;
  int head_dim = 0;
  int layer = 0;
  const int32_t* seq_info = nullptr;
  const int32_t* block_tables = nullptr;
  int num_seqs = 0;
  int max_q_len = 0;
  int max_context = 0;
  int num_heads = 0;
  float scale = 0.0f;
  float* out = nullptr;  // [tokens, num_heads * head_dim]
};

// hipErrorInvalidValue when head_dim > kAttentionMaxHeadDim or the heads do
// not divide.
hipError_t launchAttentionPrefill(const AttentionArgs& args, hipStream_t stream);

}  // namespace tandem::kernels::hip
