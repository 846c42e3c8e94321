// The chained block hash that names a full KV block everywhere in tandem: the
// block pool's prefix cache, KV events, and the router's KV index all compute
// it with this one function, so a hash seen on a worker means the same tokens
// at the router.
//
//   h[i] = XXH3_64bits_withSeed(le64(h[i - 1]) ‖ le32(t[i*B]) … le32(t[i*B + B - 1]),
//                               kPrefixHashSeed)
//
// where B is the block size, le64/le32 are little-endian encodings (the same
// bytes on every host), and h[-1] = kRootParentHash (0). Because each hash
// covers its parent, equal hashes mean equal whole prefixes, not just equal
// blocks. Only FULL blocks are hashed: a partial tail block has no hash.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tandem::kvcache {

using BlockHash = uint64_t;

// fixed seed of every block hash ("tandemkv" in ascii). changing it changes
// every hash, so the router and all workers must agree on it.
inline constexpr uint64_t kPrefixHashSeed = 0x74616e64656d6b76ULL;

// the parent of the first block of a sequence. a real hash equal to 0 is
// possible (probability 2^-64) and harmless: it only reads as "first block".
inline constexpr BlockHash kRootParentHash = 0;

// hash of one full block given its parent's hash. block_tokens must hold
// exactly one block of tokens (the caller's block size).
BlockHash hashBlock(BlockHash parent, std::span<const int32_t> block_tokens);

// hashes of every full block of `tokens` (tokens.size() / block_size of them).
// block_size must be positive.
std::vector<BlockHash> blockHashes(std::span<const int32_t> tokens, int block_size);

// incremental form: `hashes` holds the hashes of the first hashes.size() full
// blocks of `tokens` (as returned by an earlier call on a prefix of the same
// token sequence); appends the hashes of the full blocks after them and
// returns how many were added. callers that grow a sequence token by token pay
// only for the blocks that filled since the last call.
int extendBlockHashes(std::span<const int32_t> tokens, int block_size,
                      std::vector<BlockHash>& hashes);

}  // namespace tandem::kvcache
