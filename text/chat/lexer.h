// Splits a template into tokens the way jinja2's lexer does with
// trim_blocks=True and lstrip_blocks=True: text, tag delimiters and the
// expression tokens inside tags. Whitespace control ({%- -%}, {%+) and the
// two trimming options are applied here, so the parser sees final text.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tandem::chat {

struct Token {
  enum class Kind { kData, kVarBegin, kVarEnd, kBlockBegin, kBlockEnd, kName, kString, kInt,
                    kFloat, kOp, kEof };
  Kind kind;
  // data text, name, unescaped string, number digits or operator.
  std::string text;
  // byte offset in the normalized source, for error positions.
  size_t pos = 0;
};

// jinja2's newline handling: \r\n and \r become \n, and one trailing newline
// is dropped (keep_trailing_newline=False).
std::string normalizeTemplateSource(std::string source);

// "line L, column C" of byte offset `pos` in `source` (1-based).
std::string describePosition(std::string_view source, size_t pos);

// tokenizes a normalized source. A malformed tag or string is InvalidArgument
// naming its line and column. The last token is always kEof.
absl::StatusOr<std::vector<Token>> tokenizeTemplate(const std::string& source);

}  // namespace tandem::chat
