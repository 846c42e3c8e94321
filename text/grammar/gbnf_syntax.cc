// GBNF text -> syntax tree (see grammar_parser.h for the dialect).
#include <cstdint>
#include <optional>

#include "absl/strings/str_format.h"
#include "text/grammar/gbnf_ast.h"
#include "text/grammar/grammar_parser.h"

namespace tandem::grammar {
namespace {

bool isNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '-';
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class GbnfSyntax {
 public:
  explicit GbnfSyntax(std::string_view text) : text_(text) {}

  absl::StatusOr<std::vector<GbnfRule>> parse() {
    std::vector<GbnfRule> rules;
    skipSpace(true);
    while (ok() && !atEnd()) {
      GbnfRule rule;
      rule.line = line_;
      rule.column = column_;
      rule.name = parseName();
      if (!ok()) break;
      skipSpace(false);
      if (!consume("::=")) {
        fail("expected '::=' after the rule name");
        break;
      }
      skipSpace(true);
      rule.body = parseAlternatives(false);
      if (!ok()) break;
      if (!atEnd() && peek() != '\n' && peek() != '\r' && !startsRule()) {
        fail(absl::StrFormat("unexpected '%c'", peek()));
        break;
      }
      skipSpace(true);
      rules.push_back(std::move(rule));
    }
    if (!ok()) return *error_;
    if (rules.empty()) return absl::InvalidArgumentError("the grammar has no rules");
    return rules;
  }

 private:
  bool ok() const { return !error_.has_value(); }
  bool atEnd() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  void advance() {
    if (atEnd()) return;
    if (text_[pos_] == '\n') {
      ++line_;
      column_ = 1;
    } else if ((static_cast<uint8_t>(text_[pos_]) & 0xC0) != 0x80) {
      ++column_;  // columns count characters, not UTF-8 continuation bytes.
    }
    ++pos_;
  }
  bool consume(std::string_view s) {
    if (text_.substr(pos_, s.size()) != s) return false;
    for (size_t i = 0; i < s.size(); ++i) advance();
    return true;
  }
  void fail(std::string message) {
    if (error_) return;
    error_ = absl::InvalidArgumentError(absl::StrFormat(
        "grammar syntax error at line %d, column %d: %s", line_, column_, message));
  }

  // a grammar over a size limit: not a syntax error, but where it is.
  void failLimit(std::string message) {
    if (error_) return;
    error_ = absl::InvalidArgumentError(
        absl::StrFormat("the grammar is too large: %s (at line %d, column %d)", message, line_,
                        column_));
  }

  // spaces, tabs and comments; newlines too when `newlines`.
  void skipSpace(bool newlines) {
    while (!atEnd()) {
      const char c = peek();
      if (c == ' ' || c == '\t' || ((c == '\n' || c == '\r') && newlines)) {
        advance();
      } else if (c == '#') {
        while (!atEnd() && peek() != '\n') advance();
      } else {
        break;
      }
    }
  }

  // at top level, a line that goes on with `|` continues the rule.
  bool continuesWithBar() {
    size_t p = pos_;
    while (p < text_.size()) {
      const char c = text_[p];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++p;
      } else if (c == '#') {
        while (p < text_.size() && text_[p] != '\n') ++p;
      } else {
        return c == '|';
      }
    }
    return false;
  }

  // the text here is `name ::=`.
  bool startsRule() const {
    size_t p = pos_;
    while (p < text_.size() && isNameChar(text_[p])) ++p;
    while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t')) ++p;
    return text_.substr(p, 3) == "::=";
  }

  std::string parseName() {
    const size_t start = pos_;
    while (!atEnd() && isNameChar(peek())) advance();
    if (pos_ == start) fail("expected a rule name");
    return std::string(text_.substr(start, pos_ - start));
  }

  GbnfNode parseAlternatives(bool nested) {
    GbnfNode alts;
    alts.kind = GbnfNode::Kind::kAlternatives;
    alts.line = line_;
    alts.column = column_;
    alts.children.push_back(parseSequence(nested));
    while (ok()) {
      if (!nested && peek() != '|' && continuesWithBar()) skipSpace(true);
      if (peek() != '|') break;
      advance();
      skipSpace(true);
      alts.children.push_back(parseSequence(nested));
    }
    if (alts.children.size() == 1) return std::move(alts.children[0]);
    return alts;
  }

  GbnfNode parseSequence(bool nested) {
    GbnfNode seq;
    seq.kind = GbnfNode::Kind::kSequence;
    seq.line = line_;
    seq.column = column_;
    while (ok() && !atEnd()) {
      const int line = line_;
      const int column = column_;
      GbnfNode item;
      const char c = peek();
      if (c == '"') {
        item = parseLiteral();
      } else if (c == '[') {
        item = parseClass();
      } else if (c == '.') {
        advance();
        item.kind = GbnfNode::Kind::kClass;
        item.ranges = {{0, kMaxCodePoint}};
      } else if (c == '(') {
        // each level recurses here (and in the lowering and the tree's
        // destructor): bounded before it is entered.
        if (depth_ == kMaxGrammarNesting) {
          failLimit(absl::StrFormat("groups ( ... ) nest deeper than %d levels",
                                    kMaxGrammarNesting));
          break;
        }
        advance();
        skipSpace(true);
        ++depth_;
        item = parseAlternatives(true);
        --depth_;
        if (!ok()) break;
        if (peek() != ')') {
          fail("expected ')'");
          break;
        }
        advance();
      } else if (isNameChar(c)) {
        // a name followed by ::= starts the next rule.
        if (startsRule()) break;
        item.kind = GbnfNode::Kind::kRef;
        item.name = parseName();
      } else {
        break;
      }
      if (!ok()) break;
      item.line = line;
      item.column = column;
      parsePostfix(item);
      seq.children.push_back(std::move(item));
      skipSpace(nested);
    }
    if (seq.children.size() == 1) return std::move(seq.children[0]);
    return seq;
  }

  void parsePostfix(GbnfNode& item) {
    int min = 0;
    int max = -1;
    const char c = peek();
    if (c == '*') {
      advance();
    } else if (c == '+') {
      advance();
      min = 1;
    } else if (c == '?') {
      advance();
      max = 1;
    } else if (c == '{') {
      advance();
      skipSpace(false);
      std::optional<int> lo = parseCount();
      if (!lo) return;
      min = *lo;
      max = *lo;
      skipSpace(false);
      if (peek() == ',') {
        advance();
        skipSpace(false);
        max = -1;
        if (peek() != '}') {
          std::optional<int> hi = parseCount();
          if (!hi) return;
          max = *hi;
          if (max < min) {
            fail(absl::StrFormat("repetition {%d,%d}: the maximum is below the minimum", min, max));
            return;
          }
        }
        skipSpace(false);
      }
      if (peek() != '}') {
        fail("expected '}'");
        return;
      }
      advance();
    } else {
      return;
    }
    GbnfNode repeat;
    repeat.kind = GbnfNode::Kind::kRepeat;
    repeat.line = item.line;
    repeat.column = item.column;
    repeat.min = min;
    repeat.max = max;
    repeat.children.push_back(std::move(item));
    item = std::move(repeat);
  }

  std::optional<int> parseCount() {
    int64_t value = 0;
    const size_t start = pos_;
    while (!atEnd() && peek() >= '0' && peek() <= '9') {
      value = value * 10 + (peek() - '0');
      if (value > kMaxRepetition) {
        fail(absl::StrFormat("repetition counts may be at most %d", kMaxRepetition));
        return std::nullopt;
      }
      advance();
    }
    if (pos_ == start) {
      fail("expected a number");
      return std::nullopt;
    }
    return static_cast<int>(value);
  }

  // one character of a literal or class, escapes decoded; nullopt (after
  // fail) on a bad escape or the end of the text.
  std::optional<uint32_t> parseChar() {
    if (atEnd()) {
      fail("unexpected end of the grammar");
      return std::nullopt;
    }
    const auto c = static_cast<uint8_t>(peek());
    if (c == '\\') {
      advance();
      const char e = peek();
      advance();
      switch (e) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case '0': return 0;
        case '\\': case '"': case '\'': case '[': case ']': case '-': case '/': case '^':
          return static_cast<uint32_t>(e);
        case 'x': return parseHex(2);
        case 'u': return parseHex(4);
        case 'U': return parseHex(8);
        default:
          fail(absl::StrFormat("unknown escape '\\%c'", e));
          return std::nullopt;
      }
    }
    // a UTF-8 character.
    int n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || pos_ + n > text_.size()) {
      fail("invalid UTF-8 in the grammar");
      return std::nullopt;
    }
    uint32_t cp = n == 1 ? c : c & (0xFF >> (n + 1));
    advance();
    for (int i = 1; i < n; ++i) {
      const auto b = static_cast<uint8_t>(peek());
      if ((b & 0xC0) != 0x80) {
        fail("invalid UTF-8 in the grammar");
        return std::nullopt;
      }
      cp = (cp << 6) | (b & 0x3F);
      advance();
    }
    return cp;
  }

  std::optional<uint32_t> parseHex(int digits) {
    uint32_t value = 0;
    for (int i = 0; i < digits; ++i) {
      const int h = hexValue(peek());
      if (h < 0) {
        fail(absl::StrFormat("expected %d hex digits", digits));
        return std::nullopt;
      }
      value = value * 16 + static_cast<uint32_t>(h);
      advance();
    }
    if (value > kMaxCodePoint) {
      fail("code point above U+10FFFF");
      return std::nullopt;
    }
    return value;
  }

  GbnfNode parseLiteral() {
    GbnfNode lit;
    lit.kind = GbnfNode::Kind::kLiteral;
    advance();  // "
    std::vector<uint8_t> bytes;
    while (ok()) {
      if (atEnd() || peek() == '\n') {
        fail("unterminated string literal");
        break;
      }
      if (peek() == '"') {
        advance();
        break;
      }
      if (std::optional<uint32_t> cp = parseChar()) appendUtf8(*cp, bytes);
    }
    lit.bytes.assign(bytes.begin(), bytes.end());
    return lit;
  }

  GbnfNode parseClass() {
    GbnfNode cls;
    cls.kind = GbnfNode::Kind::kClass;
    advance();  // [
    if (peek() == '^') {
      advance();
      cls.negated = true;
    }
    while (ok()) {
      if (atEnd() || peek() == '\n') {
        fail("unterminated character class");
        break;
      }
      if (peek() == ']') {
        advance();
        break;
      }
      std::optional<uint32_t> lo = parseChar();
      if (!lo) break;
      uint32_t hi = *lo;
      if (peek() == '-' && peek(1) != ']') {
        advance();
        std::optional<uint32_t> end = parseChar();
        if (!end) break;
        if (*end < *lo) {
          fail("character range is out of order");
          break;
        }
        hi = *end;
      }
      cls.ranges.push_back({*lo, hi});
    }
    return cls;
  }

  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
  int column_ = 1;
  // groups open around the current position.
  int depth_ = 0;
  std::optional<absl::Status> error_;
};

}  // namespace

absl::StatusOr<std::vector<GbnfRule>> parseGbnfSyntax(std::string_view text) {
  if (text.size() > static_cast<size_t>(kMaxGrammarTextBytes)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the grammar is %d bytes; at most %d are allowed", text.size(), kMaxGrammarTextBytes));
  }
  return GbnfSyntax(text).parse();
}

absl::StatusOr<Grammar> parseGrammar(std::string_view text, std::string_view root) {
  absl::StatusOr<std::vector<GbnfRule>> rules = parseGbnfSyntax(text);
  if (!rules.ok()) return rules.status();
  return lowerGbnf(*rules, root);
}

}  // namespace tandem::grammar
