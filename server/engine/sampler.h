// Turns one row of logits into one token under a request's generation::SamplingParams.
//
// Order of operations (as vLLM v1): repetition penalty (prompt + output),
// presence/frequency penalties (output), logit_bias, the grammar's token mask
// (tokens outside it get -inf), then greedy argmax, or temperature,
// min_p, top_k, top_p and a draw from the request's SamplerRng, which walks
// the kept tokens in id order (as the device sampler, kernels/row_sampling.h,
// so a seeded request takes the same token on either). Logprobs are
// taken from the raw logits, before any of these (vLLM's default
// "raw_logprobs"), so they describe the model, not the sampling settings.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "generation/sampling_params.h"
#include "generation/token_output.h"
#include "kernels/row_sampling.h"
#include "server/engine/sampler_rng.h"
#include "text/grammar/token_mask.h"

namespace tandem::engine {

struct SampleResult {
  int32_t token = 0;
  // log-probability of `token` under the raw logits.
  float logprob = 0.0f;
  // the params.logprobs most likely tokens, most likely first (lower id
  // first on ties); empty when logprobs were not asked for.
  std::vector<generation::TokenLogprob> top_logprobs;
};

// the tokens a request has seen, for the penalties. ids outside the vocab
// are ignored.
struct TokenHistory {
  std::span<const int32_t> prompt;
  std::span<const int32_t> output;
};

// what the device sampler (Backend::sampleTokens) needs of `params` and
// `history` to sample as Sampler::sample does; the caller adds the grammar
// mask and, unless greedy, the draw (RowSampling::u).
kernels::RowSampling rowSampling(const generation::SamplingParams& params,
                                 const TokenHistory& history);

class Sampler {
 public:
  // samples one token from `logits` (one per vocab entry, not empty).
  // `params` must be valid (generation::SamplingParams::validate). a greedy request does
  // not consume randomness; any other consumes exactly one draw of `rng`, so
  // a request's tokens depend only on its seed and its logits.
  // `allowed` (when not null) is the structured-output mask: only its
  // tokens can be sampled (ids past its size never); it must allow one.
  SampleResult sample(std::span<const float> logits, const generation::SamplingParams& params,
                      const TokenHistory& history, SamplerRng& rng,
                      const grammar::TokenMask* allowed = nullptr);

  // scores `token` under `logits` (one per vocab entry, token among them):
  // its log-probability under the raw logits, its rank (1 + the tokens with
  // a higher logit) and the `top_n` most likely tokens, as sample() reports
  // them. O(vocab) plus the partial sort of top_n.
  static generation::PromptTokenLogprob score(std::span<const float> logits, int32_t token, int top_n);

  // sets every logit outside `allowed` to -inf, in place.
  static void applyMask(std::span<float> logits, const grammar::TokenMask& allowed);

  // applies the repetition, presence and frequency penalties of `params` to
  // `logits` in place (the first step of sample()).
  void applyPenalties(std::span<float> logits, const generation::SamplingParams& params,
                      const TokenHistory& history);

 private:
  int32_t argmax() const;
  int32_t draw(const generation::SamplingParams& params, SamplerRng& rng);
  static std::vector<generation::TokenLogprob> topLogprobs(std::span<const float> logits, int n,
                                               double log_sum_exp);

  // scratch reused across calls to avoid a vocab-sized allocation per token.
  std::vector<float> work_;
  std::vector<int32_t> counts_;
  std::vector<uint8_t> seen_;
  std::vector<int32_t> candidates_;
  std::vector<double> probs_;
};

}  // namespace tandem::engine
