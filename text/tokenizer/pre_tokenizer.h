// HF tokenizer.json pre-tokenizers: Split, ByteLevel, Metaspace, Sequence.
// Turns one normalized text fragment into the pre-tokens the BPE model
// merges, already spelled as the vocabulary spells them.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"
#include "text/tokenizer/split_regex.h"

namespace tandem::tokenizer {

class PreTokenizer {
 public:
  // builds from the "pre_tokenizer" value of tokenizer.json (null: the
  // whole fragment is one pre-token).
  static absl::StatusOr<PreTokenizer> fromJson(const nlohmann::json& json);
  // the byte-level pre-tokenizer of a GGUF "gpt2" vocabulary: split by
  // `pattern`, then map bytes to their stand-ins.
  static absl::StatusOr<PreTokenizer> byteLevel(std::string_view pattern);

  PreTokenizer();
  ~PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;

  // `first` is whether the fragment starts the input (Metaspace "first").
  std::vector<std::string> run(std::string_view text, bool first) const;
  // whether some step maps bytes to GPT-2 stand-ins.
  bool isByteLevel() const { return byte_level_; }
  // whether run()'s pieces together hold at least the text's bytes: no
  // Split drops what it matches, no Metaspace replaces a space by nothing
  // (ByteLevel spells a byte in 1 or 2, Metaspace a space in its
  // replacement, and prefixes only add).
  bool keepsEveryByte() const;
  // whether the last step is ByteLevel: every character of every piece is
  // then one of the 256 byte stand-ins.
  bool endsByteLevel() const { return !steps_.empty() && steps_.back().kind == Kind::kByteLevel; }

 private:
  enum class Kind { kSplit, kByteLevel, kMetaspace };
  struct Step {
    Kind kind;
    std::unique_ptr<SplitRegex> regex;  // split, or byte-level use_regex
    bool add_prefix_space = false;      // byte-level
    std::string replacement;            // metaspace
    std::string prepend_scheme;         // metaspace: always | first | never
    bool metaspace_split = false;
  };
  absl::Status addStep(const nlohmann::json& json);

  std::vector<Step> steps_;
  bool byte_level_ = false;
};

}  // namespace tandem::tokenizer
