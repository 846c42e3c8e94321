// What makes a KV block valid for a model: a block computed by one model (or
// one KV layout of it) is garbage to another. Every tier that outlives the
// process (G3 on disk) stores the fingerprint's digest with each block and
// refuses blocks written under another one.
#pragma once

#include <cstdint>
#include <string>

#include "common/dtype.h"

namespace tandem::kvcache {

struct ModelFingerprint {
  std::string architecture;  // e.g. "llama"
  int num_layers = 0, num_kv_heads = 0, head_dim = 0, block_size = 0;
  DType dtype = DType::kF32;
  // identity of the weights (e.g. XXH3 of tensor names + shapes + file size +
  // a sample of bytes; the integrator computes it). 0 = unknown.
  uint64_t weights_id = 0;

  // one 64-bit hash (XXH3) of every field above, in a fixed little-endian
  // encoding, so equal fingerprints give equal digests on every host.
  uint64_t digest() const;

  bool operator==(const ModelFingerprint&) const = default;
};

}  // namespace tandem::kvcache
