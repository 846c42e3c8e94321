#include "bench/loadgen/token_synth.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "text/tokenizer/text_util.h"
#include "text/tokenizer/tokenizer.h"

namespace tandem::bench {
namespace {

// a token fit for a synthetic prompt: printable, whole UTF-8, not special.
bool isOrdinary(const tokenizer::Tokenizer& tok, int32_t id) {
  if (tok.isSpecial(id)) return false;
  std::string bytes = tok.tokenBytes(id);
  if (bytes.empty()) return false;
  if (tokenizer::sanitizeUtf8(bytes) != bytes) return false;
  for (unsigned char c : bytes) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return true;
}

}  // namespace

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

absl::StatusOr<TokenSynth> TokenSynth::fromTokenizer(const tokenizer::Tokenizer& tok) {
  std::vector<int32_t> palette;
  for (int32_t id = 0; id < tok.vocabSize(); ++id) {
    if (isOrdinary(tok, id)) palette.push_back(id);
  }
  if (palette.size() < 16) {
    return absl::InvalidArgumentError(
        absl::StrCat("the tokenizer has only ", palette.size(), " ordinary tokens"));
  }
  return TokenSynth(std::move(palette));
}

TokenSynth TokenSynth::fromRange(int32_t first, int32_t count) {
  std::vector<int32_t> palette(count);
  for (int32_t i = 0; i < count; ++i) palette[i] = first + i;
  return TokenSynth(std::move(palette));
}

std::vector<int32_t> TokenSynth::blockTokens(uint64_t hash_id, int n) const {
  std::vector<int32_t> out(n);
  // a per-block stream: splitmix64 of (block seed + position) is an
  // independent draw per position, the same for every caller.
  uint64_t seed = splitmix64(hash_id ^ 0x74616e64656d0000ull);
  for (int i = 0; i < n; ++i) out[i] = palette_[splitmix64(seed + i) % palette_.size()];
  return out;
}

std::vector<int32_t> TokenSynth::randomTokens(std::mt19937_64& rng, int n) const {
  std::vector<int32_t> out(n);
  for (int i = 0; i < n; ++i) out[i] = palette_[rng() % palette_.size()];
  return out;
}

}  // namespace tandem::bench
