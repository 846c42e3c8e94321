// kvcache/model_fingerprint.h — what makes a KV block valid for a model.
#pragma once

#include <cstdint>
#include <string>

#include "common/dtype.h"

namespace tandem::kvcache {
struct ModelFingerprint {
  std::string architecture;      // e.g. "llama"
  int num_layers = 0, num_kv_heads = 0, head_dim = 0, block_size = 0;
  DType dtype = DType::kF32;
  uint64_t weights_id = 0;       // identity of the weights (e.g. XXH3 of tensor names+shapes+file size+a sample of bytes; the integrator computes it)
  uint64_t digest() const;       // one 64-bit hash of all fields (XXH3), stored in each record header
};
}
