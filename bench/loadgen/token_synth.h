// Deterministic synthetic prompts: token ids drawn from the ordinary tokens
// of a vocabulary (no special, control or lone-byte tokens, so the ids also
// decode to clean text for chat requests).
//
// Trace workloads (Mooncake) describe prefix sharing with hash ids of
// fixed-size blocks; blockTokens(h) always expands the same hash id to the
// same tokens, so two requests that share hash ids share a token prefix and
// a server's prefix cache sees the sharing the trace recorded.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "absl/status/statusor.h"

namespace tandem::tokenizer { class Tokenizer; }

namespace tandem::bench {

// splitmix64: a fast, well-mixed 64-bit hash (Steele et al., 2014).
uint64_t splitmix64(uint64_t x);

class TokenSynth {
 public:
  // the ordinary tokens of `tok`. Fails when the vocabulary has fewer than
  // 16 of them (nothing sensible can be synthesized).
  static absl::StatusOr<TokenSynth> fromTokenizer(const tokenizer::Tokenizer& tok);
  // ids [first, first + count): for tests and servers without a tokenizer.
  static TokenSynth fromRange(int32_t first, int32_t count);

  // `n` tokens of the block named `hash_id` (the same every call).
  std::vector<int32_t> blockTokens(uint64_t hash_id, int n) const;
  // `n` tokens from `rng`.
  std::vector<int32_t> randomTokens(std::mt19937_64& rng, int n) const;

  size_t paletteSize() const { return palette_.size(); }

 private:
  explicit TokenSynth(std::vector<int32_t> palette) : palette_(std::move(palette)) {}
  std::vector<int32_t> palette_;
};

}  // namespace tandem::bench
