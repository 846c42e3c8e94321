#include "text/grammar/json_grammar_rules.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tandem::grammar::json_rules {
namespace {

struct FixedRule {
  const char* name;
  const char* body;
  const char* deps;
};

// compact JSON: whitespace only as one optional space after ':' and ','
// (as Python's json.dumps writes it, or none), never a newline or
// indentation: every byte of padding is a token of the client's budget
// that a weak or random model could spend without end (xgrammar and
// llama.cpp's schema grammars bound it for the same reason). Numbers are
// bounded to 16 digits for the same reason.
constexpr FixedRule kFixed[] = {
    {"ws", "\" \"?", ""},
    {"value", "object | array | string | number | boolean | null",
     "object array string number boolean null"},
    {"object", "\"{\" ( member ( \",\" ws member )* )? \"}\"", "ws member"},
    {"member", "string \":\" ws value", "string ws value"},
    {"array", "\"[\" ( value ( \",\" ws value )* )? \"]\"", "ws value"},
    {"string", "\"\\\"\" char* \"\\\"\"", "char"},
    // a \u escape is never a lone surrogate (D800-DFFF unpaired), which
    // strict parsers (nlohmann, serde_json) refuse: a high one is followed
    // by a low one, making one character.
    {"char",
     "[^\"\\\\\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" ( [0-9a-cA-Ce-fE-F] hex{3} | "
     "[dD] [0-7] hex{2} | [dD] [89abAB] hex{2} \"\\\\u\" [dD] [c-fC-F] hex{2} ) )",
     "hex"},
    {"hex", "[0-9a-fA-F]", ""},
    {"number", "\"-\"? int-part frac? exp?", "int-part frac exp"},
    {"int-part", "\"0\" | [1-9] [0-9]{0,15}", ""},
    {"frac", "\".\" [0-9]{1,16}", ""},
    {"zero-frac", "\".\" \"0\"{1,16}", ""},
    {"exp", "[eE] [-+]? [0-9]{1,2}", ""},
    {"integer", "\"-\"? int-part", "int-part"},
    {"boolean", "\"true\" | \"false\"", ""},
    {"null", "\"null\"", ""},
    {"date", "[0-9]{4} \"-\" ( \"0\" [1-9] | \"1\" [0-2] ) \"-\" ( \"0\" [1-9] | [12] [0-9] | \"3\" [01] )",
     ""},
    {"time",
     "( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] \":\" [0-5] [0-9] ( \".\" [0-9]{1,6} )? "
     "( \"Z\" | [+-] ( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] )",
     ""},
    {"date-time", "date \"T\" time", "date time"},
    {"uuid", "hex{8} \"-\" hex{4} \"-\" hex{4} \"-\" hex{4} \"-\" hex{12}", "hex"},
};

std::string digitClass(char lo, char hi) {
  if (lo == hi) return absl::StrCat("\"", std::string(1, lo), "\"");
  return absl::StrCat("[", std::string(1, lo), "-", std::string(1, hi), "]");
}

std::string anyDigits(size_t n) {
  if (n == 0) return "";
  if (n == 1) return "[0-9]";
  return absl::StrCat("[0-9]{", n, "}");
}

// decimal strings of one length n >= 1 in [x, y], x <= y.
std::string sameLength(const std::string& x, const std::string& y) {
  const size_t n = x.size();
  if (n == 1) return digitClass(x[0], y[0]);
  if (x[0] == y[0]) {
    return absl::StrCat(digitClass(x[0], x[0]), " ", sameLength(x.substr(1), y.substr(1)));
  }
  const std::string xs = x.substr(1);
  const std::string ys = y.substr(1);
  const bool low_zeros = xs.find_first_not_of('0') == std::string::npos;
  const bool high_nines = ys.find_first_not_of('9') == std::string::npos;
  std::vector<std::string> parts;
  if (!low_zeros) {
    parts.push_back(
        absl::StrCat(digitClass(x[0], x[0]), " ", sameLength(xs, std::string(n - 1, '9'))));
  }
  const char from = low_zeros ? x[0] : static_cast<char>(x[0] + 1);
  const char to = high_nines ? y[0] : static_cast<char>(y[0] - 1);
  if (from <= to) parts.push_back(absl::StrCat(digitClass(from, to), " ", anyDigits(n - 1)));
  if (!high_nines) {
    parts.push_back(
        absl::StrCat(digitClass(y[0], y[0]), " ", sameLength(std::string(n - 1, '0'), ys)));
  }
  if (parts.size() == 1) return parts[0];
  return absl::StrCat("( ", absl::StrJoin(parts, " | "), " )");
}

// the decimals in [a, b], 0 <= a <= b, without leading zeros.
std::string unsignedRange(int64_t a, int64_t b) {
  std::vector<std::string> parts;
  int64_t low = 0;
  int64_t high = 9;
  for (size_t len = 1; len <= 16; ++len) {
    const int64_t lo = std::max(a, low);
    const int64_t hi = std::min(b, high);
    if (lo <= hi) parts.push_back(sameLength(std::to_string(lo), std::to_string(hi)));
    low = high + 1;
    if (high > kMaxMagnitude / 10) break;
    high = high * 10 + 9;
  }
  if (parts.size() == 1) return parts[0];
  return absl::StrCat("( ", absl::StrJoin(parts, " | "), " )");
}

// a non-negative number (no exponent) in [a, b] (b absent: up to the limit).
std::string magnitude(int64_t a, std::optional<int64_t> b) {
  if (!b) return absl::StrCat(unsignedRange(a, kMaxMagnitude), " frac?");
  std::vector<std::string> parts;
  if (a <= *b - 1) parts.push_back(absl::StrCat(unsignedRange(a, *b - 1), " frac?"));
  parts.push_back(absl::StrCat(unsignedRange(*b, *b), " zero-frac?"));
  if (parts.size() == 1) return parts[0];
  return absl::StrCat("( ", absl::StrJoin(parts, " | "), " )");
}

}  // namespace

std::optional<std::string> fixedRule(std::string_view name) {
  for (const FixedRule& r : kFixed) {
    if (name == r.name) return std::string(r.body);
  }
  return std::nullopt;
}

std::string fixedRuleDeps(std::string_view name) {
  for (const FixedRule& r : kFixed) {
    if (name == r.name) return r.deps;
  }
  return "";
}

std::string integerRange(int64_t lo, int64_t hi) {
  std::vector<std::string> parts;
  if (lo < 0) {
    const int64_t min_mag = hi < 0 ? -hi : 1;
    parts.push_back(absl::StrCat("\"-\" ", unsignedRange(min_mag, -lo)));
  }
  if (hi >= 0) parts.push_back(unsignedRange(std::max<int64_t>(lo, 0), hi));
  if (parts.size() == 1) return parts[0];
  return absl::StrCat("( ", absl::StrJoin(parts, " | "), " )");
}

std::string numberRange(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  if (lo && *lo >= 0) return magnitude(*lo, hi);
  if (hi && *hi <= 0) {
    return absl::StrCat("\"-\" ", magnitude(-*hi, lo ? std::optional<int64_t>(-*lo) : std::nullopt));
  }
  return absl::StrCat("( \"-\" ", magnitude(0, lo ? std::optional<int64_t>(-*lo) : std::nullopt),
                      " | ", magnitude(0, hi), " )");
}

}  // namespace tandem::grammar::json_rules
