// The syntax tree of a GBNF grammar text, between the parser
// (gbnf_syntax.cc) and the lowering to bytes (grammar_lowering.cc).
// Internal to text/grammar: callers use grammar_parser.h.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "text/grammar/grammar.h"
#include "text/grammar/utf8_ranges.h"

namespace tandem::grammar {

struct GbnfNode {
  enum class Kind {
    kSequence,      // children in order
    kAlternatives,  // one of children
    kLiteral,       // bytes, as UTF-8
    kClass,         // one code point of ranges (complemented when negated)
    kRef,           // the rule `name`
    kRepeat,        // children[0], min..max times (max -1: unbounded)
  };
  Kind kind = Kind::kSequence;
  std::vector<GbnfNode> children;
  std::string bytes;
  std::vector<CodePointRange> ranges;
  bool negated = false;
  std::string name;
  int min = 0;
  int max = -1;
  // where the node starts in the text (1-based), for error messages.
  int line = 0;
  int column = 0;
};

struct GbnfRule {
  std::string name;
  GbnfNode body;
  int line = 0;
  int column = 0;
};

// the rules of a GBNF text, in order; InvalidArgument "grammar syntax error
// at line L, column C: ..." for text that is not GBNF.
absl::StatusOr<std::vector<GbnfRule>> parseGbnfSyntax(std::string_view text);

// the byte-level grammar of `rules` starting at `root`. InvalidArgument for
// an undefined or twice-defined rule, a missing root, a left-recursive rule
// or a grammar over the size limits.
absl::StatusOr<Grammar> lowerGbnf(const std::vector<GbnfRule>& rules, std::string_view root);

}  // namespace tandem::grammar
