// Budget-aware masking (GrammarAutomaton::distance, maskWithin): a state's
// distance is the fewest tokens known to finish a sentence from it, and a
// matcher given the tokens left never allows a token that would leave no
// sentence within them, so a random walk cut at its budget is always a
// whole sentence when the budget was at least the empty text's distance.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "nlohmann/json.hpp"
#include "tests/test_paths.h"
#include "tests/text/grammar/grammar_test_util.h"
#include "tests/text/grammar/json_schema_check.h"
#include "text/grammar/grammar_cache.h"
#include "text/grammar/json_schema_compiler.h"
#include "text/grammar/token_matcher.h"

namespace tandem::grammar {
namespace {

using Json = nlohmann::ordered_json;

std::shared_ptr<GrammarAutomaton> automatonOf(std::string_view text, TokenVocabularyPtr vocab) {
  absl::StatusOr<Grammar> g = parseGrammar(text);
  EXPECT_TRUE(g.ok()) << g.status();
  return std::make_shared<GrammarAutomaton>(std::move(*g), std::move(vocab));
}

int32_t walk(GrammarAutomaton& a, std::string_view bytes) {
  int32_t s = a.initialState();
  for (char c : bytes) s = a.step(s, static_cast<uint8_t>(c));
  return s;
}

TEST(GrammarDistanceTest, IsTheShortestCompletionOverSingleBytes) {
  auto a = automatonOf(R"(root ::= "abc" ( "de" | "f" ) [0-9]*)", testing::byteVocabulary());
  EXPECT_EQ(a->distance(a->initialState()), 4u);  // "abcf"
  EXPECT_EQ(a->distance(walk(*a, "a")), 3u);
  EXPECT_EQ(a->distance(walk(*a, "abc")), 1u);
  EXPECT_EQ(a->distance(walk(*a, "abcd")), 1u);
  EXPECT_EQ(a->distance(walk(*a, "abcf")), 0u);
  EXPECT_EQ(a->distance(walk(*a, "abcf12")), 0u);
  // the stack's parents count too: two open groups to close.
  auto nested = automatonOf(R"g(root ::= "(" root ")" | "x")g", testing::byteVocabulary());
  EXPECT_EQ(nested->distance(walk(*nested, "((")), 3u);
}

TEST(GrammarDistanceTest, CountsMultiByteTokensWithinALiteral) {
  const TokenVocabularyPtr vocab =
      TokenVocabulary::build({"a", "b", "c", "d", "abc", "cd", "</s>"}, {}, {6});
  auto a = automatonOf(R"(root ::= "abcd")", vocab);
  EXPECT_EQ(a->distance(a->initialState()), 2u);  // "abc" "d"
  EXPECT_EQ(a->distance(walk(*a, "a")), 2u);      // "b" "cd"
  // an upper bound: "abc" spans the edge of the rule `x`, so it is not
  // counted (3 where 2 would do), but 3 tokens do finish it.
  auto split = automatonOf("root ::= \"ab\" x\nx ::= \"cd\"", vocab);
  EXPECT_EQ(split->distance(split->initialState()), 3u);
}

TEST(GrammarDistanceTest, IsUnknownWithoutTheSingleByteTokensAClassNeeds) {
  const TokenVocabularyPtr vocab = TokenVocabulary::build({"ab", "x", "</s>"}, {}, {2});
  auto a = automatonOf(R"(root ::= "x" [a-b]+)", vocab);
  EXPECT_EQ(a->distance(a->initialState()), kInfiniteCost);
  // no budget applies there: the mask is the grammar's.
  TokenMask scratch;
  const int32_t s = a->initialState();
  EXPECT_EQ(&a->maskWithin(s, 1, scratch), &a->mask(s));
}

class TokenMatcherBudgetTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto tok = testing::loadTestTokenizer(GetParam());
    ASSERT_TRUE(tok.ok()) << tok.status();
    tokenizer_ = std::move(*tok);
    eos_ = *tokenizer_->eosId();
    vocab_ = TokenVocabulary::fromTokenizer(*tokenizer_, {eos_});
    std::ifstream in(tandem::testing::testDataDir() + "/grammar/schemas.json");
    schemas_ = Json::parse(in).get<std::vector<Json>>();
  }

  // a random model: uniform among the allowed tokens (EOS half the time
  // when allowed), `budget` tokens at most, with or without the budget
  // mask. Checks at every step that a sentence stays within reach.
  std::string sample(TokenMatcher& m, std::mt19937& rng, int budget, bool budgeted) {
    std::string text;
    for (int used = 0; used < budget && !m.isTerminated(); ++used) {
      const int left = budget - used;
      if (budgeted) EXPECT_LE(m.distance(), static_cast<uint32_t>(left)) << text;
      const TokenMask& mask = budgeted ? m.allowedTokens(left) : m.allowedTokens();
      if (mask.test(eos_) && rng() % 2 == 0) break;
      const std::vector<int32_t> allowed = testing::allowedIds(mask, eos_);
      if (allowed.empty()) break;
      const int32_t token = allowed[rng() % allowed.size()];
      EXPECT_TRUE(m.accept(token));
      text += vocab_->tokenBytes(token);
    }
    return text;
  }

  tokenizer::TokenizerPtr tokenizer_;
  TokenVocabularyPtr vocab_;
  int32_t eos_ = 0;
  std::vector<Json> schemas_;
};

TEST_P(TokenMatcherBudgetTest, ARandomWalkCutAtItsBudgetIsAlwaysAValidDocument) {
  GrammarCache cache(vocab_);
  int walks = 0;
  int unbudgeted_cut = 0;
  for (size_t i = 0; i <= schemas_.size(); ++i) {
    const bool any_object = i == schemas_.size();
    const std::string text = any_object ? jsonObjectGrammar() : *compileJsonSchema(schemas_[i]);
    auto automaton = *cache.get(text);
    const uint32_t shortest = automaton->distance(automaton->initialState());
    ASSERT_LT(shortest, 200u) << text;
    for (const int extra : {0, 2, 8}) {
      const int budget = static_cast<int>(shortest) + extra;
      for (int seed = 0; seed < 3; ++seed) {
        std::mt19937 rng(static_cast<uint32_t>(seed * 1000 + i * 10 + extra));
        TokenMatcher m(automaton);
        const std::string out = sample(m, rng, budget, true);
        ASSERT_TRUE(m.isComplete()) << "schema " << i << " budget " << budget << ": " << out;
        const Json value = Json::parse(out, nullptr, false);
        ASSERT_FALSE(value.is_discarded()) << "schema " << i << ": " << out;
        if (!any_object) {
          EXPECT_EQ(testing::schemaViolation(schemas_[i], value, schemas_[i]), "") << out;
        }
        ++walks;
        // the same walk without the budget mask: a random model rarely
        // finishes in time.
        std::mt19937 again(static_cast<uint32_t>(seed * 1000 + i * 10 + extra));
        TokenMatcher free(automaton);
        (void)sample(free, again, budget, false);
        if (!free.isComplete()) ++unbudgeted_cut;
      }
    }
  }
  EXPECT_EQ(walks, static_cast<int>(schemas_.size() + 1) * 9);
  EXPECT_GT(unbudgeted_cut, walks / 4);
}

TEST_P(TokenMatcherBudgetTest, AShortBudgetAllowsOnlyTokensThatComeNearer) {
  auto automaton = automatonOf(jsonObjectGrammar(), vocab_);
  std::vector<int32_t> prefix;
  for (char c : std::string(R"({"key":"some text)")) {
    int32_t id = -1;
    for (int32_t t = 0; t < vocab_->size() && id < 0; ++t) {
      if (vocab_->isCandidate(t) && vocab_->tokenBytes(t) == std::string(1, c)) id = t;
    }
    ASSERT_GE(id, 0) << c;
    prefix.push_back(id);
  }
  TokenMatcher m(automaton);
  ASSERT_TRUE(m.acceptAll(prefix));
  // `"` then `}`: they lie in different rules (string, object), so a token
  // spelling both is not counted.
  EXPECT_EQ(m.distance(), 2u);
  // the token after which at most `n` more finish the document.
  const auto within = [&](int32_t id, uint32_t n) {
    TokenMatcher probe(automaton);
    EXPECT_TRUE(probe.acceptAll(prefix));
    EXPECT_TRUE(probe.accept(id));
    return probe.distance() <= n;
  };
  // one token left, short of 2: only tokens that come nearer.
  const std::vector<int32_t> nearer = testing::allowedIds(m.allowedTokens(1), -1);
  for (int32_t id : nearer) EXPECT_TRUE(within(id, 1)) << vocab_->tokenBytes(id);
  EXPECT_FALSE(nearer.empty());
  // two left is no better: a token that stays in the string leaves 2 to
  // do with 1. three left: every allowed token leaves one within 2 more.
  EXPECT_EQ(m.allowedTokens(2).count(), static_cast<int>(nearer.size()));
  const std::vector<int32_t> fits = testing::allowedIds(m.allowedTokens(3), -1);
  for (int32_t id : fits) EXPECT_TRUE(within(id, 2)) << vocab_->tokenBytes(id);
  EXPECT_GT(fits.size(), nearer.size());
  // with plenty left, the whole mask (tokens opening an escape or a new
  // member go farther than 1).
  EXPECT_GT(m.allowedTokens(1000).count(), static_cast<int>(fits.size()));
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, TokenMatcherBudgetTest,
                         ::testing::Values("stories260K", "llama3", "qwen3"));

}  // namespace
}  // namespace tandem::grammar
