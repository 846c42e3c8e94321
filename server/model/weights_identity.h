// The identity of a model's weights, for KV blocks that outlive the process
// (the G3 disk tier): two checkpoints with the same shapes but different
// values must not share blocks.
#pragma once

#include <cstdint>

#include "server/model/weights.h"

namespace tandem::model {

// XXH3 over every tensor's name, dtype, shape and byte size, and a sample of
// its bytes (the first, middle and last 4 KiB). Reads at most 12 KiB a tensor,
// so it costs little even for a large model; equal for the same checkpoint in
// the same format on every host.
uint64_t weightsIdentity(const ModelWeights& weights);

}  // namespace tandem::model
