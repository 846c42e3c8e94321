// Paged attention for decode (one query row per sequence) as flash-decoding:
// the context is split into partitions, one block per (partition, kv head,
// sequence) scores all of the kv head's query heads (GQA: each key and value
// is read once for the group), and a second kernel merges the partitions'
// softmax statistics. The partition is chosen per launch so that even one
// sequence fills the device (64 to 1024 positions: the largest that still
// gives about four blocks a multiprocessor), and 64 sequences at 32k do not
// drown it in tiny blocks.
//
// Two kernels behind one launch: for head_dim 16, 32, 64 or 128 four waves
// walk the keys with an online softmax in registers, head_dim / 8 lanes a
// key reading its key and value 16 bytes a lane in one pass; any other
// head_dim takes a general kernel with one key a thread.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/hip/attention_prefill.h"
#include "kernels/hip/gpu_vendor.h"

namespace tandem::kernels::hip {

inline constexpr int kDecodeMaxGroup = 16;
// positions a block takes: the general kernel keeps their scores in LDS;
// the flash kernel keeps nothing per position, so its blocks may be larger
inline constexpr int kDecodeMaxPartition = 512;
inline constexpr int kDecodeMaxFlashPartition = 1024;

// the partition (positions a block scores) a launch uses for this batch on
// the current device: `partition` when positive (tests and benchmarks pin
// it; a multiple of 32 up to kDecodeMaxFlashPartition, kDecodeMaxPartition
// for the general kernel), else chosen as above.
int attentionDecodePartition(const AttentionArgs& args, int partition = 0);

// floats of workspace launchAttentionDecode needs for this batch.
size_t attentionDecodeWorkspace(const AttentionArgs& args, int partition = 0);

// every sequence must have q_len == 1 (args.max_q_len == 1). workspace:
// attentionDecodeWorkspace(args, partition) floats of device memory.
// hipErrorInvalidValue for head_dim > kAttentionMaxHeadDim, a GQA group over
// kDecodeMaxGroup, max_q_len != 1 or a bad partition.
hipError_t launchAttentionDecode(const AttentionArgs& args, float* workspace, hipStream_t stream,
                                 int partition = 0);

}  // namespace tandem::kernels::hip
