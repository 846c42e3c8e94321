// KV cache writes and block movement over the layout of kvcache/kv_layout.h:
// block[layer][kv][slot][kv_head][head_dim], blocks contiguous.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/dtype.h"
#include "kernels/hip/gpu_vendor.h"

namespace tandem::kernels::hip {

// the part of kvcache::KvLayout the kernels need (kept free of host headers).
struct KvShape {
  int num_layers = 0;
  int width = 0;  // num_kv_heads * head_dim
  int block_size = 0;
  int num_blocks = 0;
  DType dtype = DType::kF32;
};

// scatters k and v ([tokens, width] F32) of `layer` into cache slots
// (slots [tokens] I32: block slots[t] / block_size, slot slots[t] %
// block_size), converted to the cache dtype. Tokens whose block is out of
// range are skipped.
hipError_t launchWriteKv(const float* k, const float* v, const int32_t* slots, int64_t tokens,
                         void* cache, const KvShape& shape, int layer, hipStream_t stream);

// copies whole blocks: pairs [n][2] I32 (device) = (src block, dst block), of
// block_bytes each, from src to dst storages (disjoint ranges). Pairs whose
// ids are out of [0, src_blocks) / [0, dst_blocks) are skipped. Gather to a
// staging area and scatter from one are this copy with consecutive ids.
hipError_t launchCopyBlocks(const void* src, int src_blocks, void* dst, int dst_blocks,
                            const int32_t* pairs, int n, size_t block_bytes, hipStream_t stream);

}  // namespace tandem::kernels::hip
