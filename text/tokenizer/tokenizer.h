// Text <-> token ids for every component (router, workers, bench, CLI).
//
// Implementations: byte-level BPE with a split regex (Llama 3, Qwen),
// SentencePiece-style BPE with byte fallback (Llama 2, TinyLlama, stories),
// from an HF tokenizer.json or a GGUF-embedded vocabulary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tandem::model { class GgufFile; }

namespace tandem::tokenizer {

using TokenId = int32_t;

class Tokenizer;
using TokenizerPtr = std::unique_ptr<Tokenizer>;

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // loads from a model path: an HF directory (tokenizer.json, optional
  // tokenizer_config.json) or a .gguf file with an embedded vocabulary.
  static absl::StatusOr<TokenizerPtr> load(const std::string& path);
  static absl::StatusOr<TokenizerPtr> fromHfDir(const std::string& dir);
  static absl::StatusOr<TokenizerPtr> fromGguf(const model::GgufFile& gguf);

  // tokenizes `text`. With add_special, adds the special tokens HF's
  // tokenizer(text) adds (its post-processor: BOS for Llama 2/3, none for
  // Qwen). Special tokens written in the text (e.g. "<|im_start|>") are
  // matched as single tokens, as HF does.
  virtual std::vector<TokenId> encode(std::string_view text, bool add_special) const = 0;

  // the bytes of the tokens joined. skip_special drops special/control
  // tokens. Invalid UTF-8 at the end (a partial character) is kept as raw
  // bytes; use StreamDecoder to hold it back while streaming.
  virtual std::string decode(const std::vector<TokenId>& ids, bool skip_special) const = 0;

  // the bytes one token contributes to decode() when it is not first in the
  // sequence. SentencePiece models turn the "▁" marker into a space here;
  // decode() drops the space in front of the very first token, as HF does.
  virtual std::string tokenBytes(TokenId id) const = 0;

  // the most bytes of encode()'s input one token of its output can stand
  // for: a text of n bytes encodes to at least ceil(n / this) tokens (the
  // special tokens add_special puts around it only add). What lets a caller
  // refuse a text that cannot fit a token budget by its length alone,
  // before tokenizing it. 0 when this tokenizer has no such bound: some
  // step of it may drop input bytes or fold any number of them into one
  // token (each implementation says which).
  virtual size_t maxInputBytesPerToken() const = 0;

  virtual int vocabSize() const = 0;
  virtual bool isSpecial(TokenId id) const = 0;
  // the id of a token's exact string (e.g. "<|eot_id|>"), if any.
  virtual std::optional<TokenId> tokenToId(std::string_view token) const = 0;
  virtual std::optional<TokenId> bosId() const = 0;
  virtual std::optional<TokenId> eosId() const = 0;
  // "bpe-byte-level" or "spm-bpe"
  virtual std::string kind() const = 0;
};

// Turns a stream of token ids into text deltas that are always whole UTF-8:
// bytes of a character split across tokens are held until it completes.
class StreamDecoder {
 public:
  // `continuation`: the tokens continue earlier text (a completion after
  // its prompt), so the first one keeps its leading space; otherwise the
  // text starts with them and the space is dropped as decode() drops it.
  explicit StreamDecoder(const Tokenizer& tok, bool skip_special = true,
                         bool continuation = false)
      : tok_(tok), skip_special_(skip_special), first_(!continuation) {}

  // appends one token; returns the newly completed text (maybe empty).
  std::string push(TokenId id);
  // returns whatever is held back (invalid bytes become U+FFFD).
  std::string finish();

 private:
  const Tokenizer& tok_;
  bool skip_special_;
  bool first_;
  std::string pending_;
};

}  // namespace tandem::tokenizer
