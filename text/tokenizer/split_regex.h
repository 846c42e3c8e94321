// A pre-tokenizer split by regex (HF's `Split` and the regex half of
// `ByteLevel`), on ICU's regex engine, which has the \p{..} classes,
// look-ahead and possessive quantifiers the real patterns use.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include <unicode/uversion.h>

U_NAMESPACE_BEGIN
class RegexPattern;
U_NAMESPACE_END

namespace tandem::tokenizer {

// the pattern of GPT-2 (and of ByteLevel's use_regex).
inline constexpr std::string_view kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
inline constexpr std::string_view kLlama3Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
inline constexpr std::string_view kQwen2Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

class SplitRegex {
 public:
  // what happens to the matches (HF's SplitDelimiterBehavior).
  enum class Behavior { kIsolated, kRemoved, kMergedWithPrevious, kMergedWithNext, kContiguous };

  // compiles `pattern` (HF/Oniguruma syntax); InvalidArgument when ICU
  // rejects it. With `invert`, the non-matching runs act as the matches.
  static absl::StatusOr<std::unique_ptr<SplitRegex>> create(std::string_view pattern,
                                                            Behavior behavior, bool invert);
  // splits a pattern given as a literal string (HF's {"String": ...}).
  static absl::StatusOr<std::unique_ptr<SplitRegex>> createLiteral(std::string_view literal,
                                                                   Behavior behavior, bool invert);
  ~SplitRegex();

  // true when split() drops what it matches (kRemoved, or the runs
  // between matches when inverted): its pieces may hold fewer bytes than
  // the text.
  bool dropsText() const { return behavior_ == Behavior::kRemoved; }

  // appends the non-empty pieces of `text`, views into it, to `out`.
  void split(std::string_view text, std::vector<std::string_view>* out) const;

  // `text` with every match replaced by the literal `replacement`.
  std::string replaceAll(std::string_view text, std::string_view replacement) const;

 private:
  SplitRegex(std::unique_ptr<icu::RegexPattern> pattern, Behavior behavior, bool invert);

  std::unique_ptr<icu::RegexPattern> pattern_;
  Behavior behavior_;
  bool invert_;
};

}  // namespace tandem::tokenizer
