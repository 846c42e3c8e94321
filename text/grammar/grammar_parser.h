// Parses tandem's grammar dialect: llama.cpp's GBNF.
//
//   root   ::= object                # a rule: name ::= alternatives
//   object ::= "{" ws ( pair ( "," ws pair )* )? "}"
//   pair   ::= string ":" ws value
//   string ::= "\"" [^"\\\x00-\x1f]* "\""
//   digit  ::= [0-9]                 # classes: ranges, [^...] negation
//   num    ::= "-"? digit{1,15}      # * + ? {m} {m,} {m,n} repetition
//   any    ::= .                     # any one character
//
// Rule names are [a-zA-Z0-9_-]+. Literals "..." and classes [...] take the
// escapes \n \r \t \\ \" \' \[ \] \- \/ \xHH \uHHHH \UHHHHHHHH (code
// points, written as UTF-8); classes and `.` match whole code points. A rule
// ends at the end of its line unless the next line goes on with `|`, or a
// group ( ... ) is still open. `#` starts a comment to the end of the line.
// Left recursion (a rule that can reach itself before any byte) is refused.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "text/grammar/grammar.h"

namespace tandem::grammar {

// size limits: a grammar above them is refused (InvalidArgument naming
// the limit). A grammar comes from a stranger (the `grammar` field, or a
// JSON schema compiled to one), so every structure the parser, the
// lowering and the matcher walk is bounded here.
inline constexpr int kMaxGrammarTextBytes = 1 << 20;
inline constexpr int kMaxRepetition = 100000;
// elements once repetitions are expanded (bytes, rule references, ends):
// bounds the lowering's memory and work whatever the text. A grammar of
// 255 bytes can reach the bounds (x{0,100000} makes 100000 helper rules):
// at them, lowering takes ~0.2 s and ~45 MB (4x that at 2^22 / 2^20), and
// a schema still fits two strings of maxLength 100000.
inline constexpr int kMaxGrammarElements = 1 << 20;
// rules, the helpers made for groups and repetitions included: a rule costs
// ~100 bytes besides its elements.
inline constexpr int kMaxGrammarRules = 1 << 18;
// groups ( ... ) inside groups. The parser, the lowering and the syntax
// tree's destructor recurse once per level (~1-2 KB of stack a level, more
// under sanitizers), so the bound keeps them far from any thread's stack
// limit; hand-written grammars nest a few levels and the JSON-schema
// compiler's output at most ~2 a schema level (64 levels, kMaxSchemaDepth).
inline constexpr int kMaxGrammarNesting = 256;
// alternatives of one rule (or group): each is a parse stack the matcher
// carries while they share a prefix, so a huge word list would make every
// step slow; 16384 words is far beyond a hand-written grammar.
inline constexpr int kMaxRuleAlternatives = 16384;

// the grammar of `text` starting at rule `root`. InvalidArgument naming
// the line and column of a syntax error ("grammar syntax error at line 3,
// column 7: expected '::='"), an undefined rule (and where it is used), a
// missing root, a left-recursive rule, or a grammar over the size limits
// (the message names the limit: "groups nest deeper than 256 levels").
absl::StatusOr<Grammar> parseGrammar(std::string_view text, std::string_view root = "root");

}  // namespace tandem::grammar
