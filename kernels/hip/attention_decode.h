// Paged attention for decode (one query row per sequence), split-K: the
// context is cut into partitions of 256 positions, one block per (partition,
// kv head, sequence) scores all of the kv head's query heads (GQA: each key
// and value is read once for the group), and a second kernel merges the
// partitions' softmax statistics. Long contexts fill the GPU this way even
// at batch size one.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/hip/attention_prefill.h"
#include "kernels/hip/gpu_vendor.h"

namespace tandem::kernels::hip {

inline constexpr int kDecodePartition = 256;
inline constexpr int kDecodeMaxGroup = 16;

// floats of workspace launchAttentionDecode needs for this batch.
size_t attentionDecodeWorkspace(const AttentionArgs& args);

// every sequence must have q_len == 1 (args.max_q_len == 1). workspace:
// attentionDecodeWorkspace(args) floats of device memory.
// hipErrorInvalidValue for head_dim > kAttentionMaxHeadDim, a GQA group over
// kDecodeMaxGroup or max_q_len != 1.
hipError_t launchAttentionDecode(const AttentionArgs& args, float* workspace, hipStream_t stream);

}  // namespace tandem::kernels::hip
