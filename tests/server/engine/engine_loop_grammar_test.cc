// Structured output through the real engine on stories260K: a random model
// sampled at temperature 1 still produces only text its grammar allows —
// for many seeds, every sampling option, several sequences at once, a
// migrated request resuming mid-output, and a prefill worker's first token.
#include <fstream>
#include <future>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/engine/engine_loop.h"
#include "tests/server/engine/engine_loop_test_support.h"
#include "tests/text/grammar/json_schema_check.h"
#include "text/grammar/grammar_parser.h"
#include "text/grammar/json_schema_compiler.h"
#include "text/tokenizer/tokenizer.h"

namespace tandem::engine {
namespace {

using Json = nlohmann::ordered_json;
using testing_support::Collector;

std::vector<Json> schemas() {
  std::ifstream in(tandem::testing::testDataDir() + "/grammar/schemas.json");
  return Json::parse(in).get<std::vector<Json>>();
}

class EngineLoopGrammarTest : public ::testing::Test {
 protected:
  void SetUp() override {
    loop_ = testing_support::makeLoop(testing_support::smallOptions(16, 64));
    ASSERT_NE(loop_, nullptr);
    auto tok = tokenizer::Tokenizer::load(tandem::testing::storiesGguf());
    ASSERT_TRUE(tok.ok()) << tok.status();
    tokenizer_ = std::move(*tok);
    prompt_ = tokenizer_->encode("Once upon a time", true);
  }

  // the text the client sees: every token's bytes (EOS adds none).
  std::string text(const std::vector<int32_t>& tokens) const {
    std::string out;
    for (int32_t t : tokens) {
      if (!tokenizer_->isSpecial(t)) out += tokenizer_->tokenBytes(t);
    }
    return out;
  }

  generation::SamplingParams sampled(const std::string& grammar, uint64_t seed) const {
    generation::SamplingParams p;
    p.temperature = 1.0f;
    p.seed = seed;
    p.max_tokens = 400;
    p.grammar = grammar;
    return p;
  }

  std::unique_ptr<EngineLoop> loop_;
  tokenizer::TokenizerPtr tokenizer_;
  std::vector<int32_t> prompt_;
};

TEST_F(EngineLoopGrammarTest, RandomSamplingFollowsEverySchema) {
  const std::vector<Json> all = schemas();
  ASSERT_GE(all.size(), 20u);
  generation::SeqId id = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    absl::StatusOr<std::string> grammar = grammar::compileJsonSchema(all[i]);
    ASSERT_TRUE(grammar.ok()) << i << ": " << grammar.status();
    // n = 3 sequences of each schema at once, each its own matcher and seed.
    std::vector<std::unique_ptr<Collector>> outs;
    for (uint64_t seed = 0; seed < 3; ++seed) {
      outs.push_back(std::make_unique<Collector>());
      ASSERT_TRUE(loop_->submit(++id, prompt_, sampled(*grammar, seed * 101 + i),
                                outs.back()->callback())
                      .ok());
    }
    for (auto& out : outs) {
      ASSERT_TRUE(out->wait());
      EXPECT_EQ(out->finish, generation::FinishReason::kStop) << "schema " << i << ": " << text(out->tokens);
      const std::string s = text(out->tokens);
      Json value = Json::parse(s, nullptr, false);
      ASSERT_FALSE(value.is_discarded()) << "schema " << i << ": " << s;
      EXPECT_EQ(grammar::testing::schemaViolation(all[i], value, all[i]), "")
          << "schema " << i << ": " << s;
    }
  }
}

TEST_F(EngineLoopGrammarTest, EverySamplingOptionKeepsTheOutputValid) {
  // bounded strings: the storyteller model fills an unbounded one to max_tokens.
  const std::string grammar = *grammar::compileJsonSchema(schemas()[14]);
  std::vector<generation::SamplingParams> variants;
  for (int v = 0; v < 6; ++v) variants.push_back(sampled(grammar, 1000 + v));
  variants[0].temperature = 0.0f;  // greedy
  variants[1].top_k = 5;
  variants[2].top_p = 0.5f;
  variants[3].min_p = 0.2f;
  variants[4].presence_penalty = 1.5f;
  variants[4].frequency_penalty = 1.0f;
  variants[4].repetition_penalty = 1.3f;
  variants[5].ignore_eos = true;  // the grammar's end still stops it
  variants[5].temperature = 1.5f;
  std::vector<Collector> outs(variants.size());
  for (size_t v = 0; v < variants.size(); ++v) {
    ASSERT_TRUE(loop_->submit(static_cast<generation::SeqId>(v + 1), prompt_, variants[v],
                              outs[v].callback()).ok());
  }
  for (size_t v = 0; v < variants.size(); ++v) {
    ASSERT_TRUE(outs[v].wait());
    const std::string s = text(outs[v].tokens);
    EXPECT_EQ(outs[v].finish, generation::FinishReason::kStop) << v << ": " << s;
    Json value = Json::parse(s, nullptr, false);
    EXPECT_TRUE(value.is_object()) << v << ": " << s;
  }
}

// the engine passes each sequence's tokens left (max_tokens, the context)
// to its matcher: a random model's object closes in time, where it used to
// run to the limit inside a string.
TEST_F(EngineLoopGrammarTest, OutputCutAtMaxTokensOrTheContextIsAWholeDocument) {
  const std::string grammar = grammar::jsonObjectGrammar();
  // a prompt that leaves 9 tokens of stories260K's 512-token context.
  std::vector<int32_t> long_prompt = prompt_;
  while (long_prompt.size() < 503) long_prompt.push_back(prompt_.back());
  int at_limit = 0;
  generation::SeqId id = 100;
  for (const bool context : {false, true}) {
    for (uint64_t seed = 0; seed < 10; ++seed) {
      generation::SamplingParams params = sampled(grammar, seed);
      params.max_tokens = context ? 400 : 9;
      Collector out;
      ASSERT_TRUE(loop_->submit(++id, context ? long_prompt : prompt_, params, out.callback()).ok());
      ASSERT_TRUE(out.wait());
      const std::string s = text(out.tokens);
      EXPECT_TRUE(Json::parse(s, nullptr, false).is_object()) << (context ? "context " : "") << s;
      EXPECT_LE(out.tokens.size(), 9u) << s;
      if (out.tokens.size() == 9) ++at_limit;
    }
  }
  // the limit, not the model, ended most of them.
  EXPECT_GE(at_limit, 10);
}

TEST_F(EngineLoopGrammarTest, TheSameSeedGivesTheSameOutput) {
  const std::string grammar = *grammar::compileJsonSchema(schemas()[13]);
  Collector a;
  Collector b;
  ASSERT_TRUE(loop_->submit(1, prompt_, sampled(grammar, 42), a.callback()).ok());
  ASSERT_TRUE(a.wait());
  ASSERT_TRUE(loop_->submit(2, prompt_, sampled(grammar, 42), b.callback()).ok());
  ASSERT_TRUE(b.wait());
  EXPECT_EQ(a.tokens, b.tokens);
}

TEST_F(EngineLoopGrammarTest, AMigratedRequestReplaysItsDeliveredTokens) {
  const Json schema = schemas()[21];
  const std::string grammar = *grammar::compileJsonSchema(schema);
  Collector first;
  ASSERT_TRUE(loop_->submit(1, prompt_, sampled(grammar, 7), first.callback()).ok());
  ASSERT_TRUE(first.wait());
  ASSERT_GT(first.tokens.size(), 12u);
  // as the router resubmits after its decode worker died: prompt ‖ the
  // tokens delivered so far, the rest of max_tokens, the replay count.
  for (size_t cut : {size_t{1}, size_t{5}, first.tokens.size() / 2}) {
    std::vector<int32_t> resumed = prompt_;
    resumed.insert(resumed.end(), first.tokens.begin(), first.tokens.begin() + cut);
    generation::SamplingParams params = sampled(grammar, 99 + cut);
    params.max_tokens -= static_cast<int>(cut);
    params.grammar_replay_tokens = static_cast<int>(cut);
    Collector rest;
    ASSERT_TRUE(loop_->submit(10 + cut, resumed, params, rest.callback()).ok());
    ASSERT_TRUE(rest.wait());
    std::vector<int32_t> all(first.tokens.begin(), first.tokens.begin() + cut);
    all.insert(all.end(), rest.tokens.begin(), rest.tokens.end());
    const std::string s = text(all);
    Json value = Json::parse(s, nullptr, false);
    ASSERT_FALSE(value.is_discarded()) << cut << ": " << s;
    EXPECT_EQ(grammar::testing::schemaViolation(schema, value, schema), "") << s;
  }
}

TEST_F(EngineLoopGrammarTest, ReplayedTokensTheGrammarRefusesFailTheRequest) {
  std::vector<int32_t> resumed = prompt_;
  for (int32_t t : tokenizer_->encode("hello", false)) resumed.push_back(t);
  generation::SamplingParams params = sampled(grammar::jsonObjectGrammar(), 1);
  params.grammar_replay_tokens = 2;
  Collector out;
  ASSERT_TRUE(loop_->submit(1, resumed, params, out.callback()).ok());
  ASSERT_TRUE(out.wait());
  EXPECT_EQ(out.finish, generation::FinishReason::kError);
  EXPECT_TRUE(out.tokens.empty());
  // more replayed tokens than the prompt has: the rule refuses it.
  params.grammar_replay_tokens = static_cast<int>(resumed.size()) + 1;
  EXPECT_EQ(generation::checkRequest(loop_->limits(), resumed, params).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(EngineLoopGrammarTest, AGrammarSyntaxErrorIsRefusedAtSubmit) {
  Collector out;
  const absl::Status status =
      loop_->submit(1, prompt_, sampled("root ::= \"a\" |\nfoo ::= (", 1), out.callback());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "grammar syntax error at line 2, column 10: expected ')'");
}

TEST_F(EngineLoopGrammarTest, ThePrefillWorkersFirstTokenFollowsTheGrammar) {
  // P samples the first token under the grammar; D takes it and decodes on.
  auto decode = testing_support::makeLoop(testing_support::smallOptions(16, 64));
  ASSERT_NE(decode, nullptr);
  const Json schema = schemas()[13];
  const std::string grammar = *grammar::compileJsonSchema(schema);
  for (uint64_t seed = 0; seed < 5; ++seed) {
    const generation::SamplingParams params = sampled(grammar, seed);
    Collector out;
    const generation::SeqId id = static_cast<generation::SeqId>(seed + 1);
    ASSERT_TRUE(testing_support::awaitKv(*decode, id, prompt_, params, out.callback()).ok());
    std::promise<generation::TokenOutput> done;
    ASSERT_TRUE(testing_support::submitPrefill(
                    *loop_, id, prompt_, params, nullptr,
                    [&done](const generation::TokenOutput& o) { done.set_value(o); })
                    .ok());
    const generation::TokenOutput first = done.get_future().get();
    loop_->heldPrefills().release(id);
    // (the KV blocks are not copied: D's decode reads garbage KV, which only
    // changes which valid tokens it picks.)
    ASSERT_EQ(tokenizer_->tokenBytes(first.token)[0], '{');
    decode->remotePrefill().complete(id, first);
    ASSERT_TRUE(out.wait());
    ASSERT_FALSE(out.tokens.empty());
    EXPECT_EQ(out.tokens[0], first.token);
    const std::string s = text(out.tokens);
    Json value = Json::parse(s, nullptr, false);
    ASSERT_FALSE(value.is_discarded()) << s;
    EXPECT_EQ(grammar::testing::schemaViolation(schema, value, schema), "") << s;
  }
}

TEST_F(EngineLoopGrammarTest, AFirstTokenTheGrammarRefusesIsPrefilledLocally) {
  const std::string grammar = *grammar::compileJsonSchema(schemas()[14]);
  const generation::SamplingParams params = sampled(grammar, 3);
  Collector out;
  ASSERT_TRUE(testing_support::awaitKv(*loop_, 1, prompt_, params, out.callback()).ok());
  generation::TokenOutput bad;
  bad.id = 1;
  bad.token = tokenizer_->encode("hello", false).back();  // not "{"
  loop_->remotePrefill().complete(1, bad);
  ASSERT_TRUE(out.wait());
  ASSERT_FALSE(out.tokens.empty());
  EXPECT_NE(out.tokens[0], bad.token);
  EXPECT_TRUE(Json::parse(text(out.tokens), nullptr, false).is_object()) << text(out.tokens);
}

}  // namespace
}  // namespace tandem::engine
