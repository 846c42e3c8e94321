// How one logit row becomes a token where the logits are
// (Backend::sampleTokens): the same steps, in the same order, as the
// engine's host Sampler (server/engine/sampler.h): repetition, presence and
// frequency penalties, logit_bias, the structured-output mask, then the
// greedy argmax or a draw at temperature after min_p, top_k and top_p. The
// draw's uniform number comes from the request's own generator on the host,
// so a seeded request takes the same token on either side (up to the last
// bits of a sum; see sampleTokens).
#pragma once

#include <cstdint>
#include <span>
#include <utility>

namespace tandem::kernels {

struct RowSampling {
  // the first maximum after penalties, bias and mask; the fields below the
  // penalties then do not apply.
  bool greedy = true;
  float temperature = 1.0f;  // > 0 when not greedy
  int top_k = -1;            // <= 0: off
  float top_p = 1.0f;        // 1: off
  float min_p = 0.0f;        // 0: off
  float repetition_penalty = 1.0f;
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  // the tokens the request has seen, for the penalties (ids outside the
  // vocabulary are ignored).
  std::span<const int32_t> prompt;
  std::span<const int32_t> output;
  // (token, bias) added to the logits; ids outside the vocabulary ignored.
  std::span<const std::pair<int32_t, float>> logit_bias;
  // the structured-output mask (grammar::TokenMask's words: token t allowed
  // when bit t % 64 of word t / 64 is set; ids from mask_tokens on never);
  // mask_tokens < 0: no mask.
  std::span<const uint64_t> mask_words;
  int32_t mask_tokens = -1;
  // the draw: uniform in [0, 1), one of the request's generator (unused
  // when greedy).
  double u = 0.0;

  // greedy with nothing applied before the argmax.
  bool plainGreedy() const {
    return greedy && repetition_penalty == 1.0f && presence_penalty == 0.0f &&
           frequency_penalty == 0.0f && logit_bias.empty() && mask_tokens < 0;
  }
};

}  // namespace tandem::kernels
