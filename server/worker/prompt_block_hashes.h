// The hashes naming a prompt's KV blocks in a transfer, computed the same
// way by D (which announces them to its receiver) and P (which sends them
// with the blocks): the chained prefix hash of every full block
// (kvcache/prefix_hash.h) and, when the prompt ends inside a block, the
// same chain over that partial block's tokens, so every block of the
// transfer, the last one included, is checked against the prompt.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kvcache/prefix_hash.h"

namespace tandem::worker {

// one hash per block of `prompt` (ceil(size / block_size) of them).
// block_size must be positive.
std::vector<kvcache::BlockHash> promptBlockHashes(std::span<const int32_t> prompt, int block_size);

// blocks holding `num_tokens` tokens: ceil(num_tokens / block_size).
inline int numPromptBlocks(int num_tokens, int block_size) {
  return (num_tokens + block_size - 1) / block_size;
}

}  // namespace tandem::worker
