#include "text/tokenizer/split_regex.h"

#include <unicode/regex.h>
#include <unicode/unistr.h>

#include "absl/strings/str_cat.h"
#include "text/tokenizer/text_util.h"

namespace tandem::tokenizer {
namespace {

// oniguruma's \s is unicode White_Space (with \v and U+0085); ICU's is
// [\t\n\f\r\p{Z}]. spell it out so both engines agree.
std::string toIcuSyntax(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 32);
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '\\' && i + 1 < pattern.size()) {
      char next = pattern[i + 1];
      if (next == 's') {
        out += "\\p{White_Space}";
      } else if (next == 'S') {
        out += "\\P{White_Space}";
      } else {
        out += pattern[i];
        out += next;
      }
      ++i;
      continue;
    }
    out += pattern[i];
  }
  return out;
}

std::string quoteLiteral(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

SplitRegex::SplitRegex(std::unique_ptr<icu::RegexPattern> pattern, Behavior behavior, bool invert)
    : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}

SplitRegex::~SplitRegex() = default;

absl::StatusOr<std::unique_ptr<SplitRegex>> SplitRegex::create(std::string_view pattern,
                                                               Behavior behavior, bool invert) {
  std::string icu_pattern = toIcuSyntax(pattern);
  UErrorCode status = U_ZERO_ERROR;
  UParseError parse_error;
  std::unique_ptr<icu::RegexPattern> compiled(icu::RegexPattern::compile(
      icu::UnicodeString::fromUTF8(icu_pattern), 0, parse_error, status));
  if (U_FAILURE(status) || compiled == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("bad split regex \"", asAbsl(pattern), "\": ",
                                                   u_errorName(status), " at offset ",
                                                   parse_error.offset));
  }
  return std::unique_ptr<SplitRegex>(new SplitRegex(std::move(compiled), behavior, invert));
}

absl::StatusOr<std::unique_ptr<SplitRegex>> SplitRegex::createLiteral(std::string_view literal,
                                                                      Behavior behavior,
                                                                      bool invert) {
  return create(quoteLiteral(literal), behavior, invert);
}

std::string SplitRegex::replaceAll(std::string_view text, std::string_view replacement) const {
  icu::UnicodeString utext = icu::UnicodeString::fromUTF8(
      icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  // icu gives $ and backslash a meaning in replacements; escape them.
  std::string escaped;
  for (char c : replacement) {
    if (c == '$' || c == '\\') escaped += '\\';
    escaped += c;
  }
  UErrorCode status = U_ZERO_ERROR;
  std::unique_ptr<icu::RegexMatcher> matcher(pattern_->matcher(utext, status));
  if (U_FAILURE(status)) return std::string(text);
  icu::UnicodeString result = matcher->replaceAll(icu::UnicodeString::fromUTF8(escaped), status);
  if (U_FAILURE(status)) return std::string(text);
  std::string out;
  result.toUTF8String(out);
  return out;
}

namespace {

// what split() cuts the text into: the runs of the text, each marked as a
// match or not (after inversion), in order, covering the whole text.
struct Run {
  size_t begin, end;
  bool match;
};

// utf-16 index -> utf-8 offset into `text`, to cut views into the original.
std::vector<size_t> utf8Offsets(std::string_view text, const icu::UnicodeString& utext) {
  std::vector<size_t> offset(utext.length() + 1, text.size());
  size_t byte = 0;
  int32_t unit = 0;
  while (unit < utext.length() && byte < text.size()) {
    offset[unit] = byte;
    UChar32 cp = utext.char32At(unit);
    int32_t units = U16_LENGTH(cp);
    if (units == 2) offset[unit + 1] = byte;
    unit += units;
    auto lead = static_cast<unsigned char>(text[byte]);
    byte += lead < 0x80 ? 1 : (lead & 0xE0) == 0xC0 ? 2 : (lead & 0xF0) == 0xE0 ? 3 : 4;
  }
  return offset;
}

// the text's views as `behavior` groups the runs.
void emitRuns(std::string_view text, const std::vector<Run>& runs, SplitRegex::Behavior behavior,
              std::vector<std::string_view>* out) {
  using Behavior = SplitRegex::Behavior;
  auto emit = [&](size_t b, size_t e) {
    if (e > b) out->push_back(text.substr(b, e - b));
  };
  switch (behavior) {
    case Behavior::kIsolated:
      for (const Run& r : runs) emit(r.begin, r.end);
      break;
    case Behavior::kRemoved:
      for (const Run& r : runs) {
        if (!r.match) emit(r.begin, r.end);
      }
      break;
    case Behavior::kMergedWithPrevious: {
      size_t start = 0;
      for (const Run& r : runs) {
        if (r.match) {
          emit(start, r.end);
          start = r.end;
        }
      }
      emit(start, text.size());
      break;
    }
    case Behavior::kMergedWithNext: {
      size_t start = 0;
      for (const Run& r : runs) {
        if (r.match && r.begin > start) {
          emit(start, r.begin);
          start = r.begin;
        }
      }
      emit(start, text.size());
      break;
    }
    case Behavior::kContiguous: {
      size_t start = 0;
      bool prev_match = false;
      for (size_t i = 0; i < runs.size(); ++i) {
        const Run& r = runs[i];
        if (i > 0 && !(r.match && prev_match)) {
          emit(start, r.begin);
          start = r.begin;
        }
        prev_match = r.match;
      }
      emit(start, text.size());
      break;
    }
  }
}

}  // namespace

void SplitRegex::split(std::string_view text, std::vector<std::string_view>* out) const {
  if (text.empty()) return;
  icu::UnicodeString utext = icu::UnicodeString::fromUTF8(
      icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  const std::vector<size_t> offset = utf8Offsets(text, utext);

  std::vector<Run> runs;
  UErrorCode status = U_ZERO_ERROR;
  std::unique_ptr<icu::RegexMatcher> matcher(pattern_->matcher(utext, status));
  if (U_FAILURE(status)) {
    out->push_back(text);
    return;
  }
  size_t last = 0;
  while (matcher->find(status) && U_SUCCESS(status)) {
    size_t b = offset[matcher->start(status)], e = offset[matcher->end(status)];
    if (b == e) continue;  // empty matches split nothing
    if (b > last) runs.push_back({last, b, invert_});
    runs.push_back({b, e, !invert_});
    last = e;
  }
  if (last < text.size()) runs.push_back({last, text.size(), invert_});
  emitRuns(text, runs, behavior_, out);
}

}  // namespace tandem::tokenizer
