#include "kvcache/tiers/model_fingerprint.h"

#include <xxhash.h>

#include <string_view>

namespace tandem::kvcache {
namespace {

// fixed seed of fingerprint digests ("tandemfp" in ascii).
constexpr uint64_t kFingerprintSeed = 0x74616e64656d6670ULL;

void putLe(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

uint64_t ModelFingerprint::digest() const {
  // the architecture is length-prefixed so no two field lists encode alike.
  std::string bytes;
  putLe(bytes, architecture.size(), 8);
  bytes.append(architecture);
  putLe(bytes, static_cast<uint32_t>(num_layers), 4);
  putLe(bytes, static_cast<uint32_t>(num_kv_heads), 4);
  putLe(bytes, static_cast<uint32_t>(head_dim), 4);
  putLe(bytes, static_cast<uint32_t>(block_size), 4);
  putLe(bytes, static_cast<uint8_t>(dtype), 1);
  putLe(bytes, weights_id, 8);
  return XXH3_64bits_withSeed(bytes.data(), bytes.size(), kFingerprintSeed);
}

}  // namespace tandem::kvcache
