#include "server/model/weights_identity.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

#include <algorithm>
#include <cstddef>

namespace tandem::model {
namespace {

constexpr size_t kSampleBytes = 4096;

template <typename T>
void update(XXH3_state_t* state, const T& value) {
  XXH3_64bits_update(state, &value, sizeof(value));
}

void updateSample(XXH3_state_t* state, const TensorView& t) {
  const auto* bytes = static_cast<const std::byte*>(t.data);
  if (bytes == nullptr || t.bytes == 0) return;
  const size_t n = std::min(kSampleBytes, t.bytes);
  XXH3_64bits_update(state, bytes, n);
  XXH3_64bits_update(state, bytes + (t.bytes - n) / 2, n);
  XXH3_64bits_update(state, bytes + (t.bytes - n), n);
}

}  // namespace

uint64_t weightsIdentity(const ModelWeights& weights) {
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  update(&state, static_cast<uint8_t>(weights.format()));
  for (const auto& [name, tensor] : weights.tensors()) {  // std::map: sorted by name
    XXH3_64bits_update(&state, name.data(), name.size() + 1);
    update(&state, static_cast<uint8_t>(tensor.dtype));
    update(&state, static_cast<uint64_t>(tensor.shape.size()));
    for (int64_t d : tensor.shape) update(&state, d);
    update(&state, static_cast<uint64_t>(tensor.bytes));
    updateSample(&state, tensor);
  }
  return XXH3_64bits_digest(&state);
}

}  // namespace tandem::model
