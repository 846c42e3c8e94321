// The one rule for what a generation request may ask: the limits a
// generator reports (its context, vocabulary and KV cache) and those a
// server adds (its prompt limit, its admission budget), each checked here
// and nowhere else, each refusal's message written here once.
//
// A refusal is InvalidArgument carrying its LimitKind as a Status payload
// (limitKind() reads it back), so whoever checks — the router's admission,
// a generator's submit, a worker's gRPC service — hands the front ends a
// typed reason they map once to their wire form (router/generate/
// admission_api_error.h for HTTP, router/grpc/admission_grpc_status.h for
// gRPC), never a reason rebuilt by comparing lengths again. Below the
// checks the engine asserts these limits (TANDEM_CHECK) instead of
// re-validating them.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "generation/sampling_params.h"

namespace tandem::generation {

enum class LimitKind {
  kContextLength,    // the prompt, or prompt + max_tokens, exceeds the model's context
  kPromptLength,     // the prompt exceeds the server's max prompt tokens (within the context)
  kVocabulary,       // a prompt or logit_bias token id outside the vocabulary
  kCacheFit,         // prompt + max_tokens need more KV than a whole cache holds
  kAdmissionBudget,  // more sequences or prompt tokens than the server admits at once
};

// "context_length", "prompt_length", "vocabulary", "cache_fit", "admission_budget".
std::string_view limitName(LimitKind kind);

// what a generator can take; 0 in a field = unknown or unbounded (not checked).
struct RequestLimits {
  // prompt + output tokens (the model's context).
  int max_model_len = 0;
  // the longest prompt the server accepts (0 = the context's: max_model_len - 1).
  int max_prompt_tokens = 0;
  // token ids are in [0, vocab_size).
  int vocab_size = 0;
  // tokens of KV one request may hold: a whole cache's blocks × block size
  // (the last token's KV is never stored, so a request of n tokens needs n - 1).
  int64_t max_kv_tokens = 0;
  // the admission budget: sequences and prompt tokens admitted at once.
  int64_t max_admitted_seqs = 0;
  int64_t max_admitted_prompt_tokens = 0;
};

// the limit `status` reports breaking; nullopt for any other status.
std::optional<LimitKind> limitKind(const absl::Status& status);

// a prompt of `tokens` tokens, described as `counted` ("9 tokens", "568
// bytes, so at least 142 tokens ..."): kContextLength when it leaves no room
// to generate, kPromptLength when over max_prompt_tokens.
absl::Status checkPromptLength(const RequestLimits& limits, int64_t tokens,
                               std::string_view counted);
// a prompt of `prompt_tokens` tokens asking for exactly `max_tokens` more
// (OpenAI's rule when the client sets max_tokens): kContextLength when the
// sum exceeds the context. 64 bits: max_tokens may be up to INT32_MAX.
absl::Status checkCompletionLength(const RequestLimits& limits, int64_t prompt_tokens,
                                   int64_t max_tokens);
// kVocabulary when an id of `ids` (named `what`: "prompt", "logit_bias")
// is outside the vocabulary.
absl::Status checkTokenIds(const RequestLimits& limits, std::span<const int32_t> ids,
                           std::string_view what);
// kAdmissionBudget when `seqs` sequences (`detail` says how they were
// counted) or `prompt_tokens` prompt tokens exceed what the server admits
// at once.
absl::Status checkBudget(const RequestLimits& limits, int64_t seqs, std::string_view detail,
                         int64_t prompt_tokens);

// everything a generator checks before it takes `prompt` with `params`:
// params.validate(), a non-empty prompt, grammar_replay_tokens within it
// (those are InvalidArgument without a LimitKind), the prompt's length,
// its and logit_bias's token ids, and that prompt + max_tokens (capped at
// the context, where generation stops anyway) fits one cache.
absl::Status checkRequest(const RequestLimits& limits, std::span<const int32_t> prompt,
                          const SamplingParams& params);

}  // namespace tandem::generation
