#include "generation/request_limits.h"

#include <algorithm>
#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/str_format.h"

namespace tandem::generation {
namespace {

// the Status payload naming the limit (absl's convention: a type URL).
constexpr char kLimitPayload[] = "type.tandem.dev/tandem.RequestLimit";

constexpr LimitKind kKinds[] = {LimitKind::kContextLength, LimitKind::kPromptLength,
                                LimitKind::kVocabulary, LimitKind::kCacheFit,
                                LimitKind::kAdmissionBudget};

absl::Status refusal(LimitKind kind, std::string message) {
  absl::Status status = absl::InvalidArgumentError(std::move(message));
  const std::string_view name = limitName(kind);
  status.SetPayload(kLimitPayload, absl::Cord(absl::string_view(name.data(), name.size())));
  return status;
}

int maxPrompt(const RequestLimits& limits) {
  if (limits.max_prompt_tokens > 0) return limits.max_prompt_tokens;
  return limits.max_model_len > 0 ? limits.max_model_len - 1 : 0;
}

}  // namespace

std::string_view limitName(LimitKind kind) {
  switch (kind) {
    case LimitKind::kContextLength: return "context_length";
    case LimitKind::kPromptLength: return "prompt_length";
    case LimitKind::kVocabulary: return "vocabulary";
    case LimitKind::kCacheFit: return "cache_fit";
    case LimitKind::kAdmissionBudget: return "admission_budget";
  }
  return "";
}

std::optional<LimitKind> limitKind(const absl::Status& status) {
  const absl::optional<absl::Cord> payload = status.GetPayload(kLimitPayload);
  if (!payload) return std::nullopt;
  for (LimitKind kind : kKinds) {
    const std::string_view name = limitName(kind);
    if (*payload == absl::string_view(name.data(), name.size())) return kind;
  }
  return std::nullopt;
}

absl::Status checkPromptLength(const RequestLimits& limits, int64_t tokens,
                               std::string_view counted) {
  const int max_len = limits.max_model_len;
  const int max_prompt = maxPrompt(limits);
  const bool over_context = max_len > 0 && tokens >= max_len;
  const bool over_server = max_prompt > 0 && tokens > max_prompt;
  if (!over_context && !over_server) return absl::OkStatus();
  if (over_context) {
    return refusal(LimitKind::kContextLength,
                   absl::StrFormat("this model's maximum context length is %d tokens, but the "
                                   "prompt has %s",
                                   max_len, counted));
  }
  return refusal(LimitKind::kPromptLength,
                 absl::StrFormat("this model's maximum context length is %d tokens, but the prompt "
                                 "has %s (the server allows at most %d)",
                                 max_len, counted, max_prompt));
}

absl::Status checkCompletionLength(const RequestLimits& limits, int64_t prompt_tokens,
                                   int64_t max_tokens) {
  const int64_t requested = prompt_tokens + max_tokens;
  if (limits.max_model_len <= 0 || requested <= limits.max_model_len) return absl::OkStatus();
  return refusal(LimitKind::kContextLength,
                 absl::StrFormat("this model's maximum context length is %d tokens, but %d were "
                                 "requested (%d in the prompt, %d for the completion); lower "
                                 "max_tokens or shorten the prompt",
                                 limits.max_model_len, requested, prompt_tokens, max_tokens));
}

absl::Status checkTokenIds(const RequestLimits& limits, std::span<const int32_t> ids,
                           std::string_view what) {
  for (int32_t id : ids) {
    if (id < 0 || (limits.vocab_size > 0 && id >= limits.vocab_size)) {
      return refusal(LimitKind::kVocabulary,
                     absl::StrFormat("%s token id %d is outside the vocabulary [0, %d)", what, id,
                                     limits.vocab_size));
    }
  }
  return absl::OkStatus();
}

absl::Status checkBudget(const RequestLimits& limits, int64_t seqs, std::string_view detail,
                         int64_t prompt_tokens) {
  if (limits.max_admitted_seqs > 0 && seqs > limits.max_admitted_seqs) {
    return refusal(LimitKind::kAdmissionBudget,
                   absl::StrFormat("the request asks for %d sequences (%s); the server admits at "
                                   "most %d at once",
                                   seqs, detail, limits.max_admitted_seqs));
  }
  if (limits.max_admitted_prompt_tokens > 0 && prompt_tokens > limits.max_admitted_prompt_tokens) {
    return refusal(LimitKind::kAdmissionBudget,
                   absl::StrFormat("the request's prompts hold %d tokens over its %d sequences; "
                                   "the server admits at most %d prompt tokens at once",
                                   prompt_tokens, seqs, limits.max_admitted_prompt_tokens));
  }
  return absl::OkStatus();
}

absl::Status checkRequest(const RequestLimits& limits, std::span<const int32_t> prompt,
                          const SamplingParams& params) {
  if (absl::Status s = params.validate(); !s.ok()) return s;
  if (prompt.empty()) return absl::InvalidArgumentError("the prompt is empty");
  const auto prompt_len = static_cast<int64_t>(prompt.size());
  if (params.grammar_replay_tokens > prompt_len) {
    return absl::InvalidArgumentError(
        absl::StrFormat("grammar_replay_tokens (%d) exceeds the prompt's %d tokens",
                        params.grammar_replay_tokens, prompt_len));
  }
  if (absl::Status s = checkPromptLength(limits, prompt_len, absl::StrFormat("%d tokens", prompt_len));
      !s.ok()) {
    return s;
  }
  if (absl::Status s = checkTokenIds(limits, prompt, "prompt"); !s.ok()) return s;
  for (const auto& [id, bias] : params.logit_bias) {
    if (absl::Status s = checkTokenIds(limits, std::span<const int32_t>(&id, 1), "logit_bias");
        !s.ok()) {
      return s;
    }
  }
  if (limits.max_kv_tokens <= 0) return absl::OkStatus();
  // generation stops at the context: a longer max_tokens costs no more KV.
  int64_t final_len = prompt_len + params.max_tokens;
  if (limits.max_model_len > 0) final_len = std::min<int64_t>(final_len, limits.max_model_len);
  if (final_len - 1 <= limits.max_kv_tokens) return absl::OkStatus();
  return refusal(LimitKind::kCacheFit,
                 absl::StrFormat("prompt (%d tokens) plus max_tokens (%d) needs %d tokens of kv "
                                 "cache but a cache holds only %d; lower max_tokens or shorten the "
                                 "prompt",
                                 prompt_len, params.max_tokens, final_len - 1,
                                 limits.max_kv_tokens));
}

}  // namespace tandem::generation
