// SentencePiece vocabularies embedded in GGUF (tokenizer.ggml.model
// "llama"), tokenized with llama.cpp's llm_tokenizer_spm: bigrams merged by
// vocabulary score, unknown pieces spelled as <0xXX> byte tokens.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "text/tokenizer/added_vocab.h"
#include "text/tokenizer/tokenizer.h"

namespace tandem::tokenizer {

// GGUF token types (llama.cpp's llama_token_type).
enum class GgufTokenType : int32_t {
  kUndefined = 0, kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5,
  kByte = 6,
};

class SpmTokenizer : public Tokenizer {
 public:
  struct Options {
    std::optional<TokenId> bos_id, eos_id, unk_id;
    bool add_bos = true;
    bool add_eos = false;
    // a space is put in front of the text (and after each special token).
    bool add_space_prefix = true;
  };
  // `types` and `scores` may be empty (all normal, all zero).
  SpmTokenizer(std::vector<std::string> tokens, std::vector<float> scores,
               std::vector<GgufTokenType> types, Options options);

  // Tokenizer
  std::vector<TokenId> encode(std::string_view text, bool add_special) const override;
  std::string decode(const std::vector<TokenId>& ids, bool skip_special) const override;
  std::string tokenBytes(TokenId id) const override;
  // the longest token string (at least 1): every input byte lands in one
  // symbol, and each symbol becomes a token whose string holds it (a space
  // is "▁", 3 bytes, in the string) or one <0xXX> token per byte (the
  // unknown token when the vocabulary lacks it); control and user-defined
  // tokens match their own string. Nothing is dropped or fused.
  size_t maxInputBytesPerToken() const override { return max_token_bytes_; }
  int vocabSize() const override { return static_cast<int>(tokens_.size()); }
  bool isSpecial(TokenId id) const override;
  std::optional<TokenId> tokenToId(std::string_view token) const override;
  std::optional<TokenId> bosId() const override { return options_.bos_id; }
  std::optional<TokenId> eosId() const override { return options_.eos_id; }
  std::string kind() const override { return "spm-bpe"; }

 private:
  void tokenizeText(std::string_view text, std::vector<TokenId>* out) const;
  TokenId byteToken(uint8_t byte) const;
  GgufTokenType type(TokenId id) const;

  std::vector<std::string> tokens_;
  std::vector<float> scores_;
  std::vector<GgufTokenType> types_;
  absl::flat_hash_map<std::string, TokenId> ids_;
  AddedVocab specials_;
  Options options_;
  size_t max_token_bytes_ = 1;
};

}  // namespace tandem::tokenizer
