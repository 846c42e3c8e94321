// The Tokenizer for BPE vocabularies, from tokenizer.json or a GGUF "gpt2"
// vocabulary: added tokens -> normalizer -> pre-tokenizer -> BPE merges ->
// post-processor, and the matching decoder (byte-level, or SentencePiece's
// "▁" and <0xXX> byte fallback).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "text/tokenizer/added_vocab.h"
#include "text/tokenizer/bpe_model.h"
#include "text/tokenizer/normalizer.h"
#include "text/tokenizer/pre_tokenizer.h"
#include "text/tokenizer/tokenizer.h"

namespace tandem::tokenizer {

class BpeTokenizer : public Tokenizer {
 public:
  enum class Decoding {
    kByteLevel,      // tokens spell bytes through GPT-2's stand-ins
    kSentencePiece,  // "▁" is a space, <0xXX> is a byte
    kRaw,            // tokens are their own text
  };
  struct Options {
    Decoding decoding = Decoding::kByteLevel;
    // decode() drops one space at the very start (SentencePiece's prefix).
    bool strip_leading_space = false;
    // what encode(.., add_special) puts around the text.
    std::vector<TokenId> prefix_ids;
    std::vector<TokenId> suffix_ids;
    std::optional<TokenId> bos_id;
    std::optional<TokenId> eos_id;
  };

  BpeTokenizer(std::unique_ptr<BpeModel> model, Normalizer normalizer, PreTokenizer pre_tokenizer,
               AddedVocab added, Options options);

  // Tokenizer
  std::vector<TokenId> encode(std::string_view text, bool add_special) const override;
  std::string decode(const std::vector<TokenId>& ids, bool skip_special) const override;
  std::string tokenBytes(TokenId id) const override;
  // raw bytes -> normalizer (shrinks at most by its shrinkFactor) ->
  // pre-tokenizer (keeps every byte unless it drops matches) -> BPE (a
  // token stands for at most BpeModel::maxBytesPerToken of the spelled
  // pieces); added tokens stand for their content (times the normalizer's
  // factor for those matched in normalized text). 0 when a step has no
  // bound, or an added token strips the spaces beside it (lstrip/rstrip
  // swallow any number of them).
  size_t maxInputBytesPerToken() const override { return max_input_bytes_per_token_; }
  int vocabSize() const override { return vocab_size_; }
  bool isSpecial(TokenId id) const override;
  std::optional<TokenId> tokenToId(std::string_view token) const override;
  std::optional<TokenId> bosId() const override { return options_.bos_id; }
  std::optional<TokenId> eosId() const override { return options_.eos_id; }
  std::string kind() const override;

 private:
  void encodeNormalized(std::string_view text, bool first, std::vector<TokenId>* out) const;
  size_t computeMaxInputBytesPerToken() const;

  std::unique_ptr<BpeModel> model_;
  Normalizer normalizer_;
  PreTokenizer pre_tokenizer_;
  AddedVocab added_;
  Options options_;
  int vocab_size_ = 0;
  size_t max_input_bytes_per_token_ = 0;
};

}  // namespace tandem::tokenizer
