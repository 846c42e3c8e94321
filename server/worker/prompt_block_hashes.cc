#include "server/worker/prompt_block_hashes.h"

namespace tandem::worker {

std::vector<kvcache::BlockHash> promptBlockHashes(std::span<const int32_t> prompt,
                                                  int block_size) {
  std::vector<kvcache::BlockHash> hashes = kvcache::blockHashes(prompt, block_size);
  const size_t full = hashes.size() * static_cast<size_t>(block_size);
  if (full < prompt.size()) {
    // the tail: hashed with its (shorter) length, so it never equals a full block's hash.
    const kvcache::BlockHash parent = hashes.empty() ? kvcache::kRootParentHash : hashes.back();
    hashes.push_back(kvcache::hashBlock(parent, prompt.subspan(full)));
  }
  return hashes;
}

}  // namespace tandem::worker
