// The byte layout of KV cache blocks, shared by the attention kernels, the
// block pool, the KV transport and the tiers, so a block can be copied as
// one contiguous range between any of them.
//
// Storage is an array of num_blocks blocks. One block holds block_size token
// slots of every layer, K and V:
//   block[layer][kv (0 = K, 1 = V)][slot][kv_head][head_dim]   (elements of `dtype`)
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/dtype.h"

namespace tandem::kvcache {

struct KvLayout {
  int num_layers = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int block_size = 16;
  DType dtype = DType::kF32;

  size_t elemBytes() const { return dtypeSize(dtype); }
  // elements of one layer's K (or V) in one block
  size_t sliceElems() const {
    return static_cast<size_t>(block_size) * num_kv_heads * head_dim;
  }
  size_t blockBytes() const { return sliceElems() * 2 * num_layers * elemBytes(); }
  // byte offset, inside a block, of layer `layer`'s K (kv = 0) or V (kv = 1).
  size_t sliceOffset(int layer, int kv) const {
    return (static_cast<size_t>(layer) * 2 + kv) * sliceElems() * elemBytes();
  }
};

}  // namespace tandem::kvcache
