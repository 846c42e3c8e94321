// Every bound on a stranger's grammar (grammar_parser.h, grammar_automaton.h):
// each refusal is an InvalidArgument naming its limit, inputs at the limit
// still work, and the shapes that crashed or stalled before (deep groups,
// long rule chains) are handled.
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "tests/text/grammar/grammar_test_util.h"
#include "text/grammar/grammar_parser.h"
#include "text/grammar/token_matcher.h"

namespace tandem::grammar {
namespace {

using testing::ByteMatcher;
using testing::byteVocabulary;

std::string grammarLimitErrorOf(std::string_view text) {
  absl::StatusOr<Grammar> g = parseGrammar(text);
  EXPECT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(g.status().message());
}

std::string nestedGroups(int depth) {
  std::string text = "root ::= ";
  text.append(depth, '(');
  text += "\"a\"";
  text.append(depth, ')');
  return text;
}

TEST(GrammarLimitsTest, TenThousandNestedGroupsAreRefusedNamingTheLimit) {
  // the ~20 KB grammar that overflowed the parser's stack.
  EXPECT_EQ(grammarLimitErrorOf(nestedGroups(10000)),
            "the grammar is too large: groups ( ... ) nest deeper than 256 levels (at line 1, "
            "column 266)");
  EXPECT_EQ(grammarLimitErrorOf("root ::= " + std::string(1 << 19, '(')).substr(0, 70),
            "the grammar is too large: groups ( ... ) nest deeper than 256 levels (");
  ByteMatcher deepest(*parseGrammar(nestedGroups(kMaxGrammarNesting)));
  EXPECT_TRUE(deepest.accepts("a"));
  EXPECT_FALSE(deepest.accepts("aa"));
}

TEST(GrammarLimitsTest, AlternativesOfOneRuleAreBounded) {
  std::string words = "root ::= \"w0\"";
  for (int i = 1; i < kMaxRuleAlternatives; ++i) absl::StrAppend(&words, " | \"w", i, "\"");
  ByteMatcher m(*parseGrammar(words));
  EXPECT_TRUE(m.accepts("w16383"));
  EXPECT_FALSE(m.accepts("w16384"));
  EXPECT_EQ(grammarLimitErrorOf(words + " | \"w16384\""),
            "the grammar is too large: rule 'root' has 16385 alternatives; at most 16384 are "
            "allowed");
}

TEST(GrammarLimitsTest, ExpandedElementsAndRulesAreBounded) {
  EXPECT_EQ(grammarLimitErrorOf("root ::= ( \"abcdefghij\"{100000} ){100}"),
            "the grammar is too large: more than 1048576 elements once repetitions are expanded");
  // siblings are counted before any of them is defined.
  std::string siblings = "root ::= \"x\"";
  for (int i = 0; i < 50; ++i) siblings += " | \"abcdefghij\"{10000}";
  EXPECT_EQ(grammarLimitErrorOf(siblings),
            "the grammar is too large: more than 1048576 elements once repetitions are expanded");
  // each {0,n} makes n helper rules.
  std::string rules = "root ::= r0\n";
  for (int i = 0; i < 11; ++i) absl::StrAppend(&rules, "r", i, " ::= \"\"{0,100000} r", i + 1, "\n");
  rules += "r11 ::= \"x\"\n";
  EXPECT_EQ(grammarLimitErrorOf(rules),
            "the grammar is too large: more than 262144 rules once groups and repetitions are "
            "expanded");
  EXPECT_EQ(grammarLimitErrorOf("root ::= \"a\"{200000}"),
            "grammar syntax error at line 1, column 19: repetition counts may be at most 100000");
}

TEST(GrammarLimitsTest, LongChainsOfRulesCompileAndMatch) {
  // 50000 rules, each only a reference to the next, defined top-down: the
  // matcher expands the whole chain in one step (it recursed once a link)
  // and the nullable check settles it in one pass (it took one a link).
  std::string chain;
  const int n = 50000;
  for (int i = 0; i < n; ++i) absl::StrAppend(&chain, i == 0 ? "root" : absl::StrCat("r", i), " ::= r", i + 1, "\n");
  absl::StrAppend(&chain, "r", n, " ::= \"x\"?\n");
  ByteMatcher m(*parseGrammar(chain));
  EXPECT_TRUE(m.accepts("x"));
  EXPECT_TRUE(m.accepts(""));
  EXPECT_FALSE(m.accepts("xx"));
}

TEST(GrammarLimitsTest, AStepThatNeedsTooManyStacksIsRefused) {
  // nested bounded repetitions are ambiguous: the ways to split n bytes
  // among the levels grow with n, and so do the stacks of each state.
  absl::StatusOr<Grammar> g = parseGrammar(R"(root ::= (("a"{1,300}){1,300}){1,300})");
  ASSERT_TRUE(g.ok()) << g.status();
  GrammarAutomaton a(std::move(*g), byteVocabulary());
  int32_t state = a.initialState();
  int bytes = 0;
  for (; bytes < 300 && state != GrammarAutomaton::kDead; ++bytes) state = a.step(state, 'a');
  // cut where a state would exceed the bound, long before the language ends
  // (300^3 bytes), and the same every time.
  EXPECT_EQ(state, GrammarAutomaton::kDead);
  EXPECT_GT(bytes, 20);
  EXPECT_EQ(a.stats().step_overflows, 1);
  EXPECT_LE(a.stats().stacks, int64_t{300} * GrammarAutomaton::kMaxExpansionsPerStep);
}

TEST(GrammarLimitsTest, AMaskThatNeedsTooMuchWorkIsCutShort) {
  // three rules of 16384 alternatives `[!-~] "x"`: 49152 stacks that every
  // printable byte advances, so each of the 94 steps of the initial mask
  // expands 49152 nodes, over kMaxMaskWork in all.
  std::string text = "root ::= a | b | c\n";
  for (const char* name : {"a", "b", "c"}) {
    absl::StrAppend(&text, name, " ::= [!-~] \"x\"");
    for (int i = 1; i < kMaxRuleAlternatives; ++i) text += " | [!-~] \"x\"";
    text += "\n";
  }
  absl::StatusOr<Grammar> g = parseGrammar(text);
  ASSERT_TRUE(g.ok()) << g.status();
  GrammarAutomaton a(std::move(*g), byteVocabulary());
  const TokenMask& mask = a.mask(a.initialState());
  const int64_t per_step = 3 * kMaxRuleAlternatives;
  EXPECT_EQ(a.stats().mask_overflows, 1);
  EXPECT_GE(mask.count(), GrammarAutomaton::kMaxMaskWork / (per_step + 1));
  EXPECT_LT(mask.count(), 94);
  // a byte the mask did not reach is still a step of the grammar.
  EXPECT_NE(a.step(a.initialState(), '~'), GrammarAutomaton::kDead);
}

// the expansions one allowedTokens + accept costs.
int64_t tokenWork(GrammarAutomaton& a, TokenMatcher& m, int32_t token) {
  const int64_t before = a.stats().expansions;
  (void)m.allowedTokens();
  EXPECT_TRUE(m.accept(token));
  return a.stats().expansions - before;
}

TEST(GrammarLimitsTest, AMatchersWorkPerTokenDoesNotGrowWithItsOutput) {
  // a memory bound so small that every call trims: the matcher replayed its
  // whole output into the new epoch, so a token's work grew with the output
  // (fuzz_grammar timed out on `root ::= (("!"{0,40}){1,39}){0,40}`, whose
  // states are large, under a 4 MB bound); its state is carried over.
  auto a = std::make_shared<GrammarAutomaton>(*parseGrammar(R"g(root ::= "(" root ")" | "x")g"),
                                              byteVocabulary(), AutomatonLimits{.max_bytes = 1});
  TokenMatcher m(a);
  int64_t early = 0;
  for (int i = 0; i < 400; ++i) {
    const int64_t work = tokenWork(*a, m, '(');
    if (i == 10) early = work;
    if (i > 10) EXPECT_LE(work, early + 8) << "token " << i;
  }
  EXPECT_GE(a->stats().trims, 400);
  // the state carried over is the same state: the sentence still closes.
  ASSERT_TRUE(m.accept('x'));
  for (int i = 0; i < 400; ++i) ASSERT_TRUE(m.accept(')')) << i;
  EXPECT_TRUE(m.isTerminated());
}

}  // namespace
}  // namespace tandem::grammar
