#include "text/grammar/grammar_parser.h"

#include <gtest/gtest.h>

#include "tests/text/grammar/grammar_test_util.h"

namespace tandem::grammar {
namespace {

using testing::ByteMatcher;

ByteMatcher compile(std::string_view text) {
  absl::StatusOr<Grammar> g = parseGrammar(text);
  EXPECT_TRUE(g.ok()) << g.status();
  return ByteMatcher(g.ok() ? std::move(*g) : *parseGrammar("root ::= \"\""));
}

std::string errorOf(std::string_view text) {
  absl::StatusOr<Grammar> g = parseGrammar(text);
  EXPECT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(g.status().message());
}

TEST(GrammarParserTest, MatchesLiteralsAlternativesAndGroups) {
  ByteMatcher m = compile("root ::= \"yes\" | \"no\" | ( \"may\" \"be\" )\n");
  EXPECT_TRUE(m.accepts("yes"));
  EXPECT_TRUE(m.accepts("no"));
  EXPECT_TRUE(m.accepts("maybe"));
  EXPECT_FALSE(m.accepts("ye"));
  EXPECT_FALSE(m.accepts("yess"));
  EXPECT_TRUE(m.isPrefix("ma"));
  EXPECT_FALSE(m.isPrefix("x"));
}

TEST(GrammarParserTest, RepetitionOperatorsCountExactly) {
  ByteMatcher m = compile("root ::= \"a\"* \"b\"+ \"c\"? [0-9]{2,3} \"x\"{2} \"y\"{1,}");
  EXPECT_TRUE(m.accepts("b12xxy"));
  EXPECT_TRUE(m.accepts("aaabbc123xxyyy"));
  EXPECT_FALSE(m.accepts("12xxy"));      // b+ needs one
  EXPECT_FALSE(m.accepts("b1xxy"));      // {2,3}
  EXPECT_FALSE(m.accepts("b1234xxy"));
  EXPECT_FALSE(m.accepts("b12xy"));      // {2}
  EXPECT_FALSE(m.accepts("b12xx"));      // {1,}
}

TEST(GrammarParserTest, CharacterClassesMatchCodePointsAsUtf8) {
  ByteMatcher m = compile("root ::= [^\"\\\\\\x00-\\x1F]* \"!\"");
  EXPECT_TRUE(m.accepts("héllo wörld 日本 🙂!"));
  EXPECT_FALSE(m.accepts("a\"b!"));
  EXPECT_FALSE(m.accepts("a\nb!"));
  // a lone continuation byte or a truncated sequence is not UTF-8.
  EXPECT_FALSE(m.isPrefix("\x80"));
  EXPECT_FALSE(m.accepts("\xC3!"));
  ByteMatcher greek = compile("root ::= [α-ω]+");
  EXPECT_TRUE(greek.accepts("λόγος") == false);  // ό is outside α-ω
  EXPECT_TRUE(greek.accepts("λογος"));
  ByteMatcher any = compile("root ::= . .");
  EXPECT_TRUE(any.accepts("a€"));
  EXPECT_FALSE(any.accepts("a"));
}

TEST(GrammarParserTest, EscapesCommentsAndMultiLineRules) {
  ByteMatcher m = compile(
      "# a comment\n"
      "root ::= greeting \"\\n\" \"\\x41\\u00e9\\t\"   # trailing comment\n"
      "greeting ::= \"hi\"\n"
      "  | \"hello\" ( \"\\\"\"\n"
      "  \"!\" )?\n");
  EXPECT_TRUE(m.accepts("hi\nAé\t"));
  EXPECT_TRUE(m.accepts("hello\"!\nAé\t"));
  EXPECT_FALSE(m.accepts("hello\"\nAé\t"));
}

TEST(GrammarParserTest, RecursionNestsToAnyDepth) {
  ByteMatcher m = compile("root ::= \"(\" root \")\" | \"x\"");
  EXPECT_TRUE(m.accepts("x"));
  EXPECT_TRUE(m.accepts("((((x))))"));
  EXPECT_FALSE(m.accepts("((x)"));
  EXPECT_FALSE(m.accepts("(x))"));
}

TEST(GrammarParserTest, SyntaxErrorsNameLineAndColumn) {
  EXPECT_EQ(errorOf("root ::= \"a\"\nfoo = \"b\""),
            "grammar syntax error at line 2, column 5: expected '::=' after the rule name");
  EXPECT_EQ(errorOf("root ::= \"abc"),
            "grammar syntax error at line 1, column 14: unterminated string literal");
  EXPECT_EQ(errorOf("root ::= [a-"),
            "grammar syntax error at line 1, column 13: unexpected end of the grammar");
  EXPECT_EQ(errorOf("root ::= ( \"a\" "),
            "grammar syntax error at line 1, column 16: expected ')'");
  EXPECT_EQ(errorOf("root ::= \"a\"{3,1}"),
            "grammar syntax error at line 1, column 17: repetition {3,1}: the maximum is below "
            "the minimum");
  EXPECT_EQ(errorOf("root ::= \"\\q\""),
            "grammar syntax error at line 1, column 13: unknown escape '\\q'");
}

TEST(GrammarParserTest, RefusesUndefinedDuplicateMissingRootAndLeftRecursion) {
  EXPECT_EQ(errorOf("root ::= value\n"),
            "grammar rule 'value' (used at line 1, column 10) is not defined");
  EXPECT_EQ(errorOf("root ::= \"a\"\nroot ::= \"b\"\n"),
            "grammar rule 'root' is defined twice (again at line 2, column 1)");
  EXPECT_EQ(errorOf("start ::= \"a\"\n"), "the grammar has no rule named 'root'");
  EXPECT_EQ(errorOf("root ::= expr\nexpr ::= expr \"+\" \"1\" | \"1\"\n"),
            "grammar rule 'expr' is left-recursive (it can reach itself before matching any "
            "character); rewrite it with repetition");
  EXPECT_EQ(errorOf("root ::= \"a\"? root \"b\" | \"c\"\n").substr(0, 30),
            "grammar rule 'root' is left-re");
  EXPECT_EQ(errorOf(""), "the grammar has no rules");
}

TEST(GrammarParserTest, RefusesGrammarsOverTheSizeLimits) {
  EXPECT_NE(errorOf("root ::= \"a\"{200000}").find("repetition counts may be at most"),
            std::string::npos);
  EXPECT_NE(errorOf("root ::= ( \"abcdefghij\"{100000} ){100}").find("too large"),
            std::string::npos);
}

}  // namespace
}  // namespace tandem::grammar
