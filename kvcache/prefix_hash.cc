#include "kvcache/prefix_hash.h"

#include <xxhash.h>

#include "common/status.h"

namespace tandem::kvcache {
namespace {

// writes `v` as little-endian bytes so the hash is the same on every host.
void putLe64(uint64_t v, unsigned char* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}

void putLe32(uint32_t v, unsigned char* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}

}  // namespace

BlockHash hashBlock(BlockHash parent, std::span<const int32_t> block_tokens) {
  // blocks are small (16 tokens by default): a stack buffer covers them and
  // the heap is used only for unusually large blocks.
  constexpr size_t kStackBytes = 8 + 4 * 64;
  unsigned char stack_buf[kStackBytes];
  std::vector<unsigned char> heap_buf;
  const size_t len = 8 + 4 * block_tokens.size();
  unsigned char* buf = stack_buf;
  if (len > kStackBytes) {
    heap_buf.resize(len);
    buf = heap_buf.data();
  }
  putLe64(parent, buf);
  for (size_t i = 0; i < block_tokens.size(); ++i) {
    putLe32(static_cast<uint32_t>(block_tokens[i]), buf + 8 + 4 * i);
  }
  return XXH3_64bits_withSeed(buf, len, kPrefixHashSeed);
}

std::vector<BlockHash> blockHashes(std::span<const int32_t> tokens, int block_size) {
  std::vector<BlockHash> hashes;
  extendBlockHashes(tokens, block_size, hashes);
  return hashes;
}

int extendBlockHashes(std::span<const int32_t> tokens, int block_size,
                      std::vector<BlockHash>& hashes) {
  TANDEM_CHECK(block_size > 0);
  const size_t full_blocks = tokens.size() / static_cast<size_t>(block_size);
  TANDEM_CHECK(hashes.size() <= full_blocks);
  int added = 0;
  BlockHash parent = hashes.empty() ? kRootParentHash : hashes.back();
  for (size_t b = hashes.size(); b < full_blocks; ++b) {
    parent = hashBlock(parent, tokens.subspan(b * block_size, block_size));
    hashes.push_back(parent);
    ++added;
  }
  return added;
}

}  // namespace tandem::kvcache
