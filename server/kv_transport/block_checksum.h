// The checksum every KV block travels with: XXH3-64 (xxhash) of its bytes,
// computed by the sender from its source block and by the receiver from the
// bytes it stored, so any corruption in between is caught.
#pragma once

#include <cstddef>
#include <cstdint>

#include <xxhash.h>

namespace tandem::kv_transport {

// XXH3-64 (seed 0) of `bytes` bytes at `data`.
inline uint64_t blockChecksum(const void* data, size_t bytes) {
  return XXH3_64bits(data, bytes);
}

// the same checksum over a block that arrives in pieces, in order.
class BlockChecksum {
 public:
  BlockChecksum() : state_(XXH3_createState()) { reset(); }
  ~BlockChecksum() { XXH3_freeState(state_); }
  BlockChecksum(const BlockChecksum&) = delete;
  BlockChecksum& operator=(const BlockChecksum&) = delete;

  void reset() { XXH3_64bits_reset(state_); }
  void update(const void* data, size_t bytes) { XXH3_64bits_update(state_, data, bytes); }
  // the checksum of everything added since reset(), equal to blockChecksum().
  uint64_t digest() const { return XXH3_64bits_digest(state_); }

 private:
  XXH3_state_t* state_;
};

}  // namespace tandem::kv_transport
