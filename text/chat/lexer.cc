#include "text/chat/lexer.h"

#include <cctype>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "text/chat/unicode.h"

namespace tandem::chat {
namespace {

bool isAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// python's str.rstrip() on template text before a '-' tag.
std::string rstripText(const std::string& text) {
  return pyStrip(text, nullptr, false, true);
}

// true when text[from:] is non-empty and all whitespace (jinja's \s+ fullmatch).
bool onlyWhitespaceFrom(const std::string& text, size_t from) {
  if (from >= text.size()) return false;
  for (char32_t cp : decodeUtf8(std::string_view(text).substr(from))) {
    if (!isPySpace(cp)) return false;
  }
  return true;
}

bool startsWith(const std::string& s, size_t pos, const char* lit) {
  return s.compare(pos, std::strlen(lit), lit) == 0;
}

class Lexer {
 public:
  explicit Lexer(const std::string& src) : src_(src) {}

  absl::StatusOr<std::vector<Token>> run() {
    while (pos_ < src_.size()) {
      size_t start = findTagStart(pos_);
      if (start == std::string::npos) {
        emit(Token::Kind::kData, src_.substr(pos_), pos_);
        pos_ = src_.size();
        break;
      }
      char type = src_[start + 1];
      char sign = start + 2 < src_.size() && (src_[start + 2] == '-' || src_[start + 2] == '+')
                      ? src_[start + 2] : 0;
      std::string text = src_.substr(pos_, start - pos_);
      if (sign == '-') {
        text = rstripText(text);
      } else if (sign != '+' && type != '{') {
        size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
        if ((l_pos > 0 || line_starting_) && onlyWhitespaceFrom(text, l_pos)) text.resize(l_pos);
      }
      if (!text.empty()) emit(Token::Kind::kData, std::move(text), pos_);
      line_starting_ = false;
      size_t after = start + 2 + (sign ? 1 : 0);
      if (type == '#') {
        RETURN_IF_ERROR(lexComment(start, after));
      } else if (type == '%' && isRawBegin(after)) {
        RETURN_IF_ERROR(lexRaw(start));
      } else {
        RETURN_IF_ERROR(lexTag(type, start, after));
      }
    }
    emit(Token::Kind::kEof, "", src_.size());
    return std::move(tokens_);
  }

 private:

  size_t findTagStart(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
        return i;
      }
    }
    return std::string::npos;
  }

  void emit(Token::Kind kind, std::string text, size_t pos) {
    tokens_.push_back(Token{kind, std::move(text), pos});
  }

  absl::Status error(const std::string& what, size_t pos) const {
    return absl::InvalidArgumentError(
        absl::StrCat("template syntax error: ", what, " at ", describePosition(src_, pos)));
  }

  // consumes a block end at pos_ ('+%}', '-%}' + whitespace, '%}' + one newline).
  bool consumeBlockEnd() {
    if (startsWith(src_, pos_, "+%}")) {
      pos_ += 3;
    } else if (startsWith(src_, pos_, "-%}")) {
      pos_ += 3;
      while (pos_ < src_.size() && isAsciiSpaceOrUnicode()) ++pos_;
    } else if (startsWith(src_, pos_, "%}")) {
      pos_ += 2;
      if (pos_ < src_.size() && src_[pos_] == '\n') ++pos_;
    } else {
      return false;
    }
    line_starting_ = pos_ > 0 && src_[pos_ - 1] == '\n';
    return true;
  }

  bool isAsciiSpaceOrUnicode() const { return isAsciiSpace(src_[pos_]); }

  absl::Status lexComment(size_t start, size_t after) {
    size_t q = src_.find("#}", after);
    if (q == std::string::npos) return error("missing end of comment tag", start);
    char sign = q > after && (src_[q - 1] == '-' || src_[q - 1] == '+') ? src_[q - 1] : 0;
    pos_ = q + 2;
    if (sign == '-') {
      while (pos_ < src_.size() && isAsciiSpace(src_[pos_])) ++pos_;
    } else if (sign != '+' && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
    }
    line_starting_ = src_[pos_ - 1] == '\n';
    return absl::OkStatus();
  }

  size_t skipSpaces(size_t p) const {
    while (p < src_.size() && isAsciiSpace(src_[p])) ++p;
    return p;
  }

  bool isRawBegin(size_t after) const {
    size_t p = skipSpaces(after);
    if (!startsWith(src_, p, "raw")) return false;
    p = skipSpaces(p + 3);
    return startsWith(src_, p, "%}") || startsWith(src_, p, "-%}");
  }

  absl::Status lexRaw(size_t start) {
    pos_ = skipSpaces(skipSpaces(start + 3) + 3);
    if (src_[pos_] == '-') {
      pos_ = skipSpaces(pos_ + 3);
    } else {
      pos_ += 2;
    }
    for (size_t i = src_.find("{%", pos_); i != std::string::npos; i = src_.find("{%", i + 1)) {
      size_t p = i + 2;
      char sign = p < src_.size() && (src_[p] == '-' || src_[p] == '+') ? src_[p++] : 0;
      p = skipSpaces(p);
      if (!startsWith(src_, p, "endraw")) continue;
      p = skipSpaces(p + 6);
      if (!(startsWith(src_, p, "%}") || startsWith(src_, p, "-%}") || startsWith(src_, p, "+%}"))) {
        continue;
      }
      std::string text = src_.substr(pos_, i - pos_);
      if (sign == '-') {
        text = rstripText(text);
      } else if (sign != '+') {
        size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
        if (l_pos > 0 && onlyWhitespaceFrom(text, l_pos)) text.resize(l_pos);
      }
      if (!text.empty()) emit(Token::Kind::kData, std::move(text), pos_);
      pos_ = p;
      consumeBlockEnd();
      return absl::OkStatus();
    }
    return error("missing end of raw directive", start);
  }

  absl::Status lexTag(char type, size_t start, size_t after) {
    bool block = type == '%';
    emit(block ? Token::Kind::kBlockBegin : Token::Kind::kVarBegin, "", start);
    pos_ = after;
    std::vector<char> brackets;
    while (true) {
      while (pos_ < src_.size() && isAsciiSpace(src_[pos_])) ++pos_;
      if (pos_ >= src_.size()) {
        return error(block ? "unexpected end of template, expected '%}'"
                           : "unexpected end of template, expected '}}'", start);
      }
      size_t tok_pos = pos_;
      if (brackets.empty()) {
        if (block && consumeBlockEnd()) {
          emit(Token::Kind::kBlockEnd, "", tok_pos);
          return absl::OkStatus();
        }
        if (!block && startsWith(src_, pos_, "-}}")) {
          pos_ += 3;
          while (pos_ < src_.size() && isAsciiSpace(src_[pos_])) ++pos_;
          line_starting_ = src_[pos_ - 1] == '\n';
          emit(Token::Kind::kVarEnd, "", tok_pos);
          return absl::OkStatus();
        }
        if (!block && startsWith(src_, pos_, "}}")) {
          pos_ += 2;
          emit(Token::Kind::kVarEnd, "", tok_pos);
          return absl::OkStatus();
        }
      }
      char c = src_[pos_];
      if (c >= '0' && c <= '9') {
        lexNumber();
      } else if (c == '_' || std::isalpha(static_cast<unsigned char>(c)) ||
                 static_cast<unsigned char>(c) >= 0x80) {
        size_t b = pos_;
        while (pos_ < src_.size() && (src_[pos_] == '_' || std::isalnum(static_cast<unsigned char>(src_[pos_])) ||
                                      static_cast<unsigned char>(src_[pos_]) >= 0x80)) {
          ++pos_;
        }
        emit(Token::Kind::kName, src_.substr(b, pos_ - b), b);
      } else if (c == '\'' || c == '"') {
        RETURN_IF_ERROR(lexString());
      } else {
        RETURN_IF_ERROR(lexOperator(brackets));
      }
    }
  }

  void lexNumber() {
    size_t b = pos_;
    auto digits = [&] {
      while (pos_ < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[pos_])) ||
                                    (src_[pos_] == '_' && pos_ + 1 < src_.size() &&
                                     std::isdigit(static_cast<unsigned char>(src_[pos_ + 1]))))) {
        ++pos_;
      }
    };
    bool after_dot = b > 0 && src_[b - 1] == '.';
    if (!after_dot && startsWith(src_, pos_, "0") && pos_ + 1 < src_.size() &&
        std::strchr("xXoObB", src_[pos_ + 1]) != nullptr && src_[pos_ + 1] != 0) {
      pos_ += 2;
      while (pos_ < src_.size() && (std::isxdigit(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) ++pos_;
      emit(Token::Kind::kInt, stripUnderscores(src_.substr(b, pos_ - b)), b);
      return;
    }
    digits();
    bool is_float = false;
    if (!after_dot) {
      size_t save = pos_;
      if (pos_ + 1 < src_.size() && src_[pos_] == '.' && std::isdigit(static_cast<unsigned char>(src_[pos_ + 1]))) {
        ++pos_;
        digits();
        is_float = true;
      }
      size_t before_exp = pos_;
      if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
        size_t p = pos_ + 1;
        if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
        if (p < src_.size() && std::isdigit(static_cast<unsigned char>(src_[p]))) {
          pos_ = p;
          digits();
          is_float = true;
        } else {
          pos_ = before_exp;
        }
      }
      if (!is_float) pos_ = save;
    }
    emit(is_float ? Token::Kind::kFloat : Token::Kind::kInt,
         stripUnderscores(src_.substr(b, pos_ - b)), b);
  }

  static std::string stripUnderscores(std::string s) {
    std::string out;
    for (char c : s) {
      if (c != '_') out.push_back(c);
    }
    return out;
  }

  absl::Status lexString() {
    size_t b = pos_;
    char quote = src_[pos_++];
    std::string raw;
    while (true) {
      if (pos_ >= src_.size()) return error("unterminated string", b);
      char c = src_[pos_];
      if (c == quote) break;
      if (c == '\\' && pos_ + 1 < src_.size()) {
        raw.push_back(c);
        raw.push_back(src_[pos_ + 1]);
        pos_ += 2;
        continue;
      }
      raw.push_back(c);
      ++pos_;
    }
    ++pos_;
    emit(Token::Kind::kString, unescape(raw), b);
    return absl::OkStatus();
  }

  // python's unicode-escape decoding of a string literal's body.
  static std::string unescape(const std::string& raw) {
    std::string out;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '\\' || i + 1 >= raw.size()) {
        out.push_back(raw[i]);
        continue;
      }
      char e = raw[++i];
      auto hex = [&](int n) -> bool {
        char32_t cp = 0;
        for (int k = 1; k <= n; ++k) {
          if (i + k >= raw.size() || !std::isxdigit(static_cast<unsigned char>(raw[i + k]))) return false;
          char h = raw[i + k];
          cp = cp * 16 + (std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
        }
        appendUtf8(out, cp);
        i += n;
        return true;
      };
      switch (e) {
        case 'n': out.push_back('\n'); break;
        case 't': out.push_back('\t'); break;
        case 'r': out.push_back('\r'); break;
        case '\\': out.push_back('\\'); break;
        case '\'': out.push_back('\''); break;
        case '"': out.push_back('"'); break;
        case 'a': out.push_back('\a'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'v': out.push_back('\v'); break;
        case '\n': break;
        case 'x': if (!hex(2)) out += "\\x"; break;
        case 'u': if (!hex(4)) out += "\\u"; break;
        case 'U': if (!hex(8)) out += "\\U"; break;
        default:
          if (e >= '0' && e <= '7') {
            int v = e - '0';
            for (int k = 0; k < 2 && i + 1 < raw.size() && raw[i + 1] >= '0' && raw[i + 1] <= '7'; ++k) {
              v = v * 8 + (raw[++i] - '0');
            }
            appendUtf8(out, static_cast<char32_t>(v));
          } else {
            out.push_back('\\');
            out.push_back(e);
          }
      }
    }
    return out;
  }

  absl::Status lexOperator(std::vector<char>& brackets) {
    static const char* kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
    for (const char* op : kTwo) {
      if (startsWith(src_, pos_, op)) {
        emit(Token::Kind::kOp, op, pos_);
        pos_ += 2;
        return absl::OkStatus();
      }
    }
    char c = src_[pos_];
    if (std::strchr("+-/*%~[](){}><=.:|,;", c) == nullptr) {
      return error(absl::StrCat("unexpected char '", std::string(1, c), "'"), pos_);
    }
    if (c == '(' || c == '[' || c == '{') brackets.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    if (c == ')' || c == ']' || c == '}') {
      if (brackets.empty()) return error(absl::StrCat("unexpected '", std::string(1, c), "'"), pos_);
      if (brackets.back() != c) {
        return error(absl::StrCat("unexpected '", std::string(1, c), "', expected '",
                                  std::string(1, brackets.back()), "'"), pos_);
      }
      brackets.pop_back();
    }
    emit(Token::Kind::kOp, std::string(1, c), pos_);
    ++pos_;
    return absl::OkStatus();
  }

  const std::string& src_;
  size_t pos_ = 0;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

}  // namespace

std::string normalizeTemplateSource(std::string source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out.push_back(source[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::string describePosition(std::string_view source, size_t pos) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < pos && i < source.size(); ++i) {
    if (source[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return absl::StrCat("line ", line, ", column ", col);
}

absl::StatusOr<std::vector<Token>> tokenizeTemplate(const std::string& source) {
  return Lexer(source).run();
}

}  // namespace tandem::chat
