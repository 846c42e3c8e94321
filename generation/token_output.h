// What a generation produces, token by token: the value the engine emits
// and every front end (OpenAI HTTP, tandem gRPC, the router's remote
// generator) consumes. No dependencies, so a front end that only forwards
// tokens never links compute code.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace tandem::generation {

// one sequence being generated (a request's id in the engine).
using SeqId = uint64_t;

enum class FinishReason {
  kNone,    // still generating.
  kStop,    // sampled an EOS token (unless ignore_eos) or a stop_token_ids entry.
  kLength,  // reached max_tokens or the model's context length.
  kAbort,   // cancelled by abort().
  kError,   // the model failed on a step holding this request.
};

// the one name of each reason, as every API spells it (OpenAI's
// finish_reason, tandem.v1's GenerateResponse, `tandem generate --json`):
// "stop" | "length" | "abort" | "error"; "" for kNone.
std::string_view finishReasonName(FinishReason reason);

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
  bool operator==(const TokenLogprob&) const = default;
};

// one prompt token scored: its log-probability given the prompt tokens
// before it, its rank there (1 + the tokens strictly more likely, as vLLM),
// and the most likely tokens there.
struct PromptTokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
  int32_t rank = 0;
  std::vector<TokenLogprob> top_logprobs;
  bool operator==(const PromptTokenLogprob&) const = default;
};

// one new token of one request.
struct TokenOutput {
  SeqId id = 0;
  int32_t token = 0;
  // log-probability of `token` under the raw logits, and the top ones when
  // the request asked for logprobs.
  float logprob = 0.0f;
  std::vector<TokenLogprob> top_logprobs;
  FinishReason finish_reason = FinishReason::kNone;
  int num_prompt_tokens = 0;
  int num_output_tokens = 0;
  int num_cached_tokens = 0;
  // with SamplingParams::prompt_logprobs, on the request's first output
  // only: one entry per prompt token from the second (the first has no
  // context), in prompt order.
  std::vector<PromptTokenLogprob> prompt_logprobs;

  bool finished() const { return finish_reason != FinishReason::kNone; }
};

}  // namespace tandem::generation
