#include "text/grammar/token_matcher.h"

#include <gtest/gtest.h>

#include <random>

#include "tests/test_paths.h"
#include "tests/text/grammar/grammar_test_util.h"

using tandem::grammar::testing::ByteMatcher;
#include "text/grammar/grammar_cache.h"
#include "text/grammar/json_schema_compiler.h"

namespace tandem::grammar {
namespace {

using Json = nlohmann::ordered_json;

const char* kSchema = R"({"type":"object","properties":{
    "name":{"type":"string","maxLength":12},
    "age":{"type":"integer","minimum":0,"maximum":150},
    "score":{"type":"number"},
    "tags":{"type":"array","items":{"enum":["a","b","c"]},"maxItems":4},
    "ok":{"type":"boolean"}},
  "required":["name","age","ok"]})";

class TokenMatcherTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto tok = testing::loadTestTokenizer(GetParam());
    ASSERT_TRUE(tok.ok()) << tok.status() << " (run tests/fetch_test_data.sh "
                          << tandem::testing::fetchedDataDir() << ")";
    tokenizer_ = std::move(*tok);
    ASSERT_TRUE(tokenizer_->eosId().has_value());
    eos_ = *tokenizer_->eosId();
    vocab_ = TokenVocabulary::fromTokenizer(*tokenizer_, {eos_});
  }

  std::shared_ptr<GrammarAutomaton> automaton(const std::string& text, size_t max_bytes =
                                                  GrammarAutomaton::kDefaultMaxBytes) {
    GrammarCache cache(vocab_, 4, max_bytes);
    auto a = cache.get(text);
    EXPECT_TRUE(a.ok()) << a.status();
    return *a;
  }

  // samples uniformly among the allowed tokens (EOS first when allowed)
  // until the matcher terminates; returns the text.
  std::string sample(TokenMatcher& m, std::mt19937& rng, int max_steps = 400) {
    std::string text;
    for (int step = 0; step < max_steps && !m.isTerminated(); ++step) {
      const TokenMask& mask = m.allowedTokens();
      if (mask.test(eos_)) {
        EXPECT_TRUE(m.isComplete());
        if (rng() % 2 == 0) {
          EXPECT_TRUE(m.accept(eos_));
          break;
        }
      }
      const std::vector<int32_t> allowed = testing::allowedIds(mask, eos_);
      if (allowed.empty()) break;
      const int32_t token = allowed[rng() % allowed.size()];
      EXPECT_TRUE(m.accept(token));
      text += tokenizer_->tokenBytes(token);
    }
    return text;
  }

  // a token whose bytes are exactly `bytes` (every vocabulary here has one
  // for each ASCII character).
  int32_t tokenFor(std::string_view bytes) const {
    for (int32_t id = 0; id < vocab_->size(); ++id) {
      if (vocab_->isCandidate(id) && vocab_->tokenBytes(id) == bytes) return id;
    }
    ADD_FAILURE() << "no token for " << bytes;
    return -1;
  }

  tokenizer::TokenizerPtr tokenizer_;
  TokenVocabularyPtr vocab_;
  int32_t eos_ = 0;
};

TEST_P(TokenMatcherTest, MaskHoldsExactlyTheTokensThatKeepTheTextValid) {
  absl::StatusOr<std::string> text = compileJsonSchema(Json::parse(kSchema));
  ASSERT_TRUE(text.ok());
  auto a = automaton(*text);
  // states along a valid document: each mask equals the brute-force check.
  const std::string doc = R"({"name":"Al","age":42,"tags":["b"],"ok":true})";
  int32_t state = a->initialState();
  for (size_t i = 0; i <= doc.size(); ++i) {
    if (i % 7 == 0 || i == doc.size()) {
      const TokenMask& mask = a->mask(state);
      for (int32_t id = 0; id < vocab_->size(); ++id) {
        const bool alive = a->stepToken(state, id) != GrammarAutomaton::kDead;
        const bool eos_ok = id == eos_ && a->accepting(state);
        ASSERT_EQ(mask.test(id), alive || eos_ok) << "token " << id << " at byte " << i;
      }
    }
    if (i < doc.size()) state = a->step(state, static_cast<uint8_t>(doc[i]));
    ASSERT_NE(state, GrammarAutomaton::kDead) << i;
  }
  EXPECT_TRUE(a->accepting(state));
}

TEST_P(TokenMatcherTest, RandomTokenWalksAlwaysProduceValidJson) {
  absl::StatusOr<std::string> text = compileJsonSchema(Json::parse(kSchema));
  ASSERT_TRUE(text.ok());
  auto a = automaton(*text);
  int completed = 0;
  for (int seed = 0; seed < 20; ++seed) {
    std::mt19937 rng(seed);
    TokenMatcher m(a);
    const std::string out = sample(m, rng);
    if (!m.isComplete()) continue;
    ++completed;
    Json parsed = Json::parse(out, nullptr, false);
    ASSERT_FALSE(parsed.is_discarded()) << out;
    EXPECT_TRUE(parsed["name"].is_string()) << out;
    EXPECT_LE(parsed["age"].get<int>(), 150) << out;
    EXPECT_TRUE(parsed["ok"].is_boolean()) << out;
  }
  EXPECT_GE(completed, 15);
}

TEST_P(TokenMatcherTest, EosOnlyWhenCompleteAndTerminatesAfterTheValue) {
  auto a = automaton(R"(root ::= "{" "\"k\":" [0-9] "}")");
  TokenMatcher m(a);
  EXPECT_FALSE(m.allowedTokens().test(eos_));
  EXPECT_FALSE(m.accept(eos_));
  for (char c : std::string(R"({"k":)")) ASSERT_TRUE(m.accept(tokenFor(std::string(1, c))));
  EXPECT_FALSE(m.isComplete());
  // a token that is not in the grammar is refused and changes nothing.
  EXPECT_FALSE(m.accept(tokenFor("x")));
  EXPECT_TRUE(m.accept(tokenFor("7")));
  EXPECT_FALSE(m.isTerminated());
  const std::vector<int32_t> close = {tokenFor("}")};
  ASSERT_TRUE(m.acceptAll(close));
  EXPECT_TRUE(m.isComplete());
  EXPECT_TRUE(m.isTerminated());
  EXPECT_TRUE(m.allowedTokens().test(eos_));
  EXPECT_EQ(m.allowedTokens().count(), 1);
}

TEST_P(TokenMatcherTest, ReplaysItsTokensAfterTheAutomatonTrims) {
  absl::StatusOr<std::string> text = compileJsonSchema(Json::parse(kSchema));
  ASSERT_TRUE(text.ok());
  // a bound so small that every call trims.
  auto a = automaton(*text, 1);
  std::mt19937 rng(7);
  TokenMatcher m(a);
  const std::string out = sample(m, rng, 60);
  EXPECT_GT(a->stats().trims, 5);
  // the walk is still valid: a fresh matcher accepts the same text.
  ByteMatcher check(*parseGrammar(*text));
  EXPECT_TRUE(check.isPrefix(out)) << out;
}

TEST_P(TokenMatcherTest, SpecialTokensAreNeverAllowed) {
  auto a = automaton(R"(root ::= [^\x00]*)");
  TokenMatcher m(a);
  const TokenMask& mask = m.allowedTokens();
  for (int32_t id = 0; id < tokenizer_->vocabSize(); ++id) {
    if (tokenizer_->isSpecial(id) && id != eos_) {
      EXPECT_FALSE(mask.test(id)) << id;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, TokenMatcherTest,
                         ::testing::Values("stories260K", "llama3", "qwen3"));

}  // namespace
}  // namespace tandem::grammar
