// The rotary inverse frequencies every backend uses, so all of them rotate
// by the same angles (plain, and llama3-scaled as HF transformers computes
// them in _compute_llama3_parameters).
#pragma once

#include <vector>

#include "kernels/backend.h"

namespace tandem::kernels {

// head_dim / 2 inverse frequencies; pair i rotates by position * result[i].
std::vector<float> ropeInverseFrequencies(const RopeParams& params);

}  // namespace tandem::kernels
