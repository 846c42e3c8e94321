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

// size limits: a grammar above them is refused (InvalidArgument).
inline constexpr int kMaxGrammarTextBytes = 1 << 20;
inline constexpr int kMaxRepetition = 100000;
inline constexpr int kMaxGrammarElements = 1 << 22;

// the grammar of `text` starting at rule `root`. InvalidArgument naming
// the line and column of a syntax error ("grammar syntax error at line 3,
// column 7: expected '::='"), an undefined rule (and where it is used), a
// missing root, a left-recursive rule, or a grammar over the size limits.
absl::StatusOr<Grammar> parseGrammar(std::string_view text, std::string_view root = "root");

}  // namespace tandem::grammar
