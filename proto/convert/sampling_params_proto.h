// tandem.v1.SamplingParams <-> generation::SamplingParams. Unset fields take
// the OpenAI defaults (temperature 1, max_tokens 16).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "generation/sampling_params.h"
#include "tandem/v1/inference.pb.h"

namespace tandem::rpc {

// the engine's parameters, validated (InvalidArgument names the field).
// the grammar is carried as text, not compiled (the engine compiles it;
// grammar_replay_tokens travels in the worker messages, not here).
absl::StatusOr<generation::SamplingParams> fromProto(const tandem::v1::SamplingParams& proto);

// the parameters as a message (every field set).
tandem::v1::SamplingParams toProto(const generation::SamplingParams& params,
                                   const std::vector<std::string>& stop);

}  // namespace tandem::rpc
