// HF tokenizer.json normalizers: NFC/NFD/NFKC/NFKD (ICU), Lowercase,
// Prepend, Replace, Strip and Sequence of them.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"
#include "text/tokenizer/split_regex.h"

namespace tandem::tokenizer {

class Normalizer {
 public:
  // builds from the "normalizer" value of tokenizer.json (null: identity).
  // InvalidArgument on a type this implementation does not know.
  static absl::StatusOr<Normalizer> fromJson(const nlohmann::json& json);

  Normalizer();
  ~Normalizer();
  Normalizer(Normalizer&&) noexcept;
  Normalizer& operator=(Normalizer&&) noexcept;

  bool empty() const { return steps_.empty(); }
  std::string apply(std::string_view text) const;

  // f such that apply(t) has at least |t| / f bytes for every t; 0 when no
  // step sequence bounds it (Strip drops any run of spaces at the ends, a
  // Replace with empty content or a regex pattern any number of bytes).
  // Prepend only adds; a literal Replace of L bytes by C shrinks a match to
  // C/L of it; the Unicode forms and Lowercase at most to a quarter (the
  // most is a 4-byte character folding to 1 byte, U+1D400 -> "A" in NFKC:
  // tests/text/tokenizer/normalizer_test.cc checks every code point and
  // every canonical and compatibility composition).
  size_t shrinkFactor() const;

 private:
  enum class Kind { kNfc, kNfd, kNfkc, kNfkd, kLowercase, kPrepend, kReplace, kStrip };
  struct Step {
    Kind kind;
    std::string content;               // prepend / replacement text
    std::string literal;               // replace: a string pattern
    std::unique_ptr<SplitRegex> regex;  // replace: a regex pattern
    bool strip_left = false, strip_right = false;
  };
  absl::Status addStep(const nlohmann::json& json);

  std::vector<Step> steps_;
};

}  // namespace tandem::tokenizer
