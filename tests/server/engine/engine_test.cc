#include "server/engine/engine.h"

#include <cmath>
#include <map>
#include <vector>

#include "gtest/gtest.h"
#include "tests/server/engine/next_token_model.h"

namespace tandem::engine {
namespace {

constexpr int kEngineVocab = testing::kNextTokenVocab;
using CountingModel = testing::NextTokenModel;

class EngineTest : public ::testing::Test {
 protected:
  static EngineConfig config() { return testing::smallEngineConfig(16); }

  static std::map<generation::SeqId, std::vector<int32_t>> run(Engine& engine) {
    std::map<generation::SeqId, std::vector<int32_t>> tokens;
    for (int i = 0; i < 1000 && engine.hasUnfinished(); ++i) {
      for (const generation::TokenOutput& o : engine.step()) tokens[o.id].push_back(o.token);
    }
    return tokens;
  }

  CountingModel model_;
};

TEST_F(EngineTest, GreedyRequestFollowsTheModelAndReportsLogprobs) {
  Engine engine(config(), model_);
  generation::SamplingParams p;
  p.temperature = 0.0f;
  p.max_tokens = 4;
  p.logprobs = 2;
  ASSERT_TRUE(engine.addRequest(1, {1, 2, 3, 5, 6}, p).ok());
  // chunk 4: the first step computes 4 prompt tokens and samples nothing.
  EXPECT_TRUE(engine.step().empty());
  std::vector<generation::TokenOutput> outputs;
  while (engine.hasUnfinished()) {
    for (auto& o : engine.step()) outputs.push_back(std::move(o));
  }
  ASSERT_EQ(outputs.size(), 4u);
  const float expected = static_cast<float>(5.0 - std::log(std::exp(5.0) + 7.0));
  const float other = static_cast<float>(0.0 - std::log(std::exp(5.0) + 7.0));
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(outputs[i].token, (7 + i) % kEngineVocab);
    EXPECT_FLOAT_EQ(outputs[i].logprob, expected);
    ASSERT_EQ(outputs[i].top_logprobs.size(), 2u);
    EXPECT_EQ(outputs[i].top_logprobs[0].token, (7 + i) % kEngineVocab);
    // ties among the rest go to the lowest id.
    EXPECT_EQ(outputs[i].top_logprobs[1].token, i == 1 ? 1 : 0);
    EXPECT_FLOAT_EQ(outputs[i].top_logprobs[1].logprob, other);
  }
  EXPECT_EQ(outputs[3].finish_reason, generation::FinishReason::kLength);
  EXPECT_EQ(outputs[3].num_prompt_tokens, 5);
  EXPECT_EQ(outputs[3].num_output_tokens, 4);
  EXPECT_EQ(engine.kvCache().blockPool().numUsed(), 0);
}

TEST_F(EngineTest, SeededRequestsRepeatTheirOutputInAnyBatch) {
  generation::SamplingParams p;
  p.temperature = 3.0f;  // flat enough that draws vary.
  p.max_tokens = 12;
  p.seed = 1234;
  Engine alone(config(), model_);
  ASSERT_TRUE(alone.addRequest(1, {1, 2, 3}, p).ok());
  const auto solo = run(alone);

  CountingModel other_model;
  Engine batched(config(), other_model);
  generation::SamplingParams q = p;
  q.seed = 99;
  ASSERT_TRUE(batched.addRequest(7, {4, 4, 4, 4, 4, 4}, q).ok());
  ASSERT_TRUE(batched.addRequest(8, {1, 2, 3}, p).ok());
  const auto both = run(batched);
  EXPECT_EQ(both.at(8), solo.at(1));
  EXPECT_NE(both.at(7), solo.at(1));
}

TEST_F(EngineTest, ModelFailureFinishesTheStepsRequestsWithError) {
  Engine engine(config(), model_);
  generation::SamplingParams p;
  p.temperature = 0.0f;
  p.max_tokens = 8;
  ASSERT_TRUE(engine.addRequest(1, {1, 2}, p).ok());
  ASSERT_TRUE(engine.addRequest(2, {3, 4}, p).ok());
  EXPECT_EQ(engine.step().size(), 2u);
  model_.fail_on_call = 2;
  const auto outputs = engine.step();
  ASSERT_EQ(outputs.size(), 2u);
  for (const generation::TokenOutput& o : outputs) {
    EXPECT_EQ(o.finish_reason, generation::FinishReason::kError);
    EXPECT_EQ(o.token, -1);
    EXPECT_EQ(o.num_output_tokens, 1);
  }
  EXPECT_FALSE(engine.hasUnfinished());
  EXPECT_EQ(engine.kvCache().blockPool().numUsed(), 0);
}

}  // namespace
}  // namespace tandem::engine
