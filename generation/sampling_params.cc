#include "generation/sampling_params.h"

#include <cmath>

#include "absl/strings/str_format.h"

namespace tandem::generation {

absl::Status SamplingParams::validate() const {
  if (!std::isfinite(temperature) || temperature < 0.0f) {
    return absl::InvalidArgumentError(
        absl::StrFormat("temperature must be a number >= 0, got %g", temperature));
  }
  if (top_k < -1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "top_k must be -1 or 0 (disabled) or at least 1, got %d", top_k));
  }
  if (!(top_p > 0.0f && top_p <= 1.0f)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("top_p must be in (0, 1], got %g", top_p));
  }
  if (!(min_p >= 0.0f && min_p <= 1.0f)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("min_p must be in [0, 1], got %g", min_p));
  }
  if (!(repetition_penalty > 0.0f) || !std::isfinite(repetition_penalty)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "repetition_penalty must be a number > 0, got %g", repetition_penalty));
  }
  if (!(presence_penalty >= -2.0f && presence_penalty <= 2.0f)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "presence_penalty must be in [-2, 2], got %g", presence_penalty));
  }
  if (!(frequency_penalty >= -2.0f && frequency_penalty <= 2.0f)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "frequency_penalty must be in [-2, 2], got %g", frequency_penalty));
  }
  if (max_tokens < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("max_tokens must be at least 1, got %d", max_tokens));
  }
  if (logprobs && (*logprobs < 0 || *logprobs > kMaxLogprobs)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "logprobs must be in [0, %d], got %d", kMaxLogprobs, *logprobs));
  }
  if (prompt_logprobs && (*prompt_logprobs < 0 || *prompt_logprobs > kMaxLogprobs)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "prompt_logprobs must be in [0, %d], got %d", kMaxLogprobs, *prompt_logprobs));
  }
  if (grammar_replay_tokens < 0 || (grammar_replay_tokens > 0 && grammar.empty())) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "grammar_replay_tokens must be >= 0 and needs a grammar, got %d", grammar_replay_tokens));
  }
  for (int32_t id : stop_token_ids) {
    if (id < 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("stop_token_ids must be >= 0, got %d", id));
    }
  }
  if (logit_bias.size() > static_cast<size_t>(kMaxLogitBias)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "logit_bias may hold at most %d entries, got %d", kMaxLogitBias, logit_bias.size()));
  }
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("logit_bias token ids must be >= 0, got %d", id));
    }
    if (!(bias >= -kMaxBias && bias <= kMaxBias)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "logit_bias values must be in [-100, 100], got %g for token %d", bias, id));
    }
  }
  return absl::OkStatus();
}

}  // namespace tandem::generation
