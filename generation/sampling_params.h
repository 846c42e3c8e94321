// Per-request sampling parameters, with the meanings (and defaults) of
// vLLM's SamplingParams and the OpenAI API. validate() rejects values a
// client sent by mistake, with a message fit for an HTTP 400.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace tandem::generation {

struct SamplingParams {
  // most top logprobs one token can carry (the OpenAI limit).
  static constexpr int kMaxLogprobs = 20;
  // most logit_bias entries one request may carry, and the bias's bound.
  static constexpr int kMaxLogitBias = 1024;
  static constexpr float kMaxBias = 100.0f;
  // temperatures below this sample greedily (dividing by them would overflow).
  static constexpr float kGreedyTemperature = 1e-5f;

  // 0 = greedy (exact argmax, lowest token id on ties); must be >= 0.
  float temperature = 1.0f;
  // keep the k most likely tokens; -1 or 0 disables (vLLM accepts both);
  // below -1 is invalid. top_k = 1 is greedy.
  int top_k = -1;
  // keep the smallest set of most likely tokens whose probability sums to
  // at least top_p; in (0, 1], 1 disables.
  float top_p = 1.0f;
  // drop tokens whose probability is below min_p times the most likely
  // token's; in [0, 1], 0 disables.
  float min_p = 0.0f;
  // HF-style: the logit of every token seen in prompt or output is divided
  // by it when positive and multiplied by it when negative; > 0, 1 disables.
  float repetition_penalty = 1.0f;
  // OpenAI-style, on output tokens only: logit -= presence_penalty once for
  // a token that appeared, and frequency_penalty times its count; in [-2, 2].
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  // seeds the request's own generator: the same seed (and inputs) gives the
  // same output. unset: a seed is drawn per request.
  std::optional<uint64_t> seed;
  // generation stops after any of these tokens (the token is kept in the output).
  std::vector<int32_t> stop_token_ids;
  // most tokens to generate; >= 1.
  int max_tokens = 16;
  // keep generating past the model's EOS tokens.
  bool ignore_eos = false;
  // unset: no logprobs. n: the sampled token's logprob plus the n most
  // likely tokens' (0 <= n <= kMaxLogprobs), from the raw model logits.
  std::optional<int> logprobs;
  // unset: none. n: the log-probability of every prompt token after the
  // first given the tokens before it, its rank, and the n most likely tokens
  // at its position (0 <= n <= kMaxLogprobs), from the raw logits (vLLM's
  // prompt_logprobs; OpenAI's echo with logprobs). They come with the
  // request's first output (TokenOutput::prompt_logprobs). The prompt is
  // then computed whole: the prefix cache is not read for it (a cached
  // block has no logits), as vLLM does.
  std::optional<int> prompt_logprobs;
  // structured output (response_format, the `grammar` extension, forced tool
  // calls): the generated text must be a sentence of this grammar, in
  // tandem's GBNF dialect (text/grammar). Empty: unconstrained. The front end
  // compiles JSON schemas into it (and refuses what it cannot express); the
  // engine masks each step's logits to the tokens that keep the text valid.
  std::string grammar;
  // OpenAI's logit_bias: (token id, bias) pairs added to the logits before
  // sampling; bias in [-kMaxBias, kMaxBias] (-100 bans a token, +100 all
  // but forces it), at most kMaxLogitBias entries. Ids must be in the
  // vocabulary (the engine checks; the sampler ignores any outside it).
  std::vector<std::pair<int32_t, float>> logit_bias;
  // with a grammar: the last this many prompt tokens were generated under it
  // already (a request migrated to another worker resubmits prompt ‖ the
  // tokens delivered so far), so the engine advances the grammar over them
  // before sampling. never set by clients (the router sets it); >= 0 and at
  // most the prompt's length.
  int grammar_replay_tokens = 0;

  bool isGreedy() const { return temperature < kGreedyTemperature || top_k == 1; }

  // ok, or InvalidArgument naming the first bad field and its valid range.
  absl::Status validate() const;
};

}  // namespace tandem::generation
