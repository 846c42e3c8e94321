// generation::PromptTokenLogprob <-> tandem.v1.PromptLogprob, and how a
// prompt's scores are cut into stream messages: at most
// kPromptLogprobsPerMessage entries each, so a long prompt with 20 top
// tokens a position stays far below gRPC's 4 MiB message limit (an entry
// is at most ~230 bytes: 4096 of them under 1 MiB).
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

#include "generation/token_output.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "tandem/v1/inference.pb.h"

namespace tandem::rpc {

inline constexpr size_t kPromptLogprobsPerMessage = 4096;

using PromptLogprobsProto = google::protobuf::RepeatedPtrField<tandem::v1::PromptLogprob>;

// appends `scores` to `out`, each with its logprob set.
void appendPromptLogprobs(std::span<const generation::PromptTokenLogprob> scores,
                          PromptLogprobsProto* out);

// appends the entries of `in` to `out`; an entry without a logprob (the
// prompt's first token, in the public API) is skipped.
void appendPromptLogprobs(const PromptLogprobsProto& in,
                          std::vector<generation::PromptTokenLogprob>* out);

// `scores` in parts of at most kPromptLogprobsPerMessage: calls
// `emit(part)` once per part, in order (never for an empty `scores`).
template <typename Emit>
void forEachPromptLogprobsPart(std::span<const generation::PromptTokenLogprob> scores, Emit emit) {
  for (size_t at = 0; at < scores.size(); at += kPromptLogprobsPerMessage) {
    emit(scores.subspan(at, std::min(kPromptLogprobsPerMessage, scores.size() - at)));
  }
}

}  // namespace tandem::rpc
