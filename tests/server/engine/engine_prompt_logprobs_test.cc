// Prompt scoring (generation::SamplingParams::prompt_logprobs) through the engine: every
// prompt token after the first scored from the row of the position before
// it, handed out with the first output, computed whole (never from the
// prefix cache), at most max_prompt_logprob_rows rows a step, and not scored
// twice when a preemption recomputes the prompt.
#include <cmath>
#include <map>
#include <vector>

#include "gtest/gtest.h"
#include "server/engine/engine.h"
#include "tests/server/engine/next_token_model.h"

namespace tandem::engine {
namespace {

constexpr int kScoringVocab = testing::kNextTokenVocab;
using testing::NextTokenModel;

const double kScoringLse = std::log(std::exp(5.0) + 7.0);
const float kFavored = static_cast<float>(5.0 - kScoringLse);
const float kOther = static_cast<float>(0.0 - kScoringLse);

// the scores NextTokenModel gives prompt tokens 1.. of `prompt`.
std::vector<std::pair<float, int>> expectedScores(const std::vector<int32_t>& prompt) {
  std::vector<std::pair<float, int>> out;
  for (size_t i = 1; i < prompt.size(); ++i) {
    const bool favored = prompt[i] == (prompt[i - 1] + 1) % kScoringVocab;
    out.emplace_back(favored ? kFavored : kOther, favored ? 1 : 2);
  }
  return out;
}

class EnginePromptLogprobsTest : public ::testing::Test {
 protected:
  static EngineConfig config() { return testing::smallEngineConfig(32); }
  static generation::SamplingParams scoring(int top_n, int max_tokens = 1) {
    generation::SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = max_tokens;
    p.prompt_logprobs = top_n;
    return p;
  }
  // every output of every request, by request, until all finished.
  static std::map<generation::SeqId, std::vector<generation::TokenOutput>> run(Engine& engine) {
    std::map<generation::SeqId, std::vector<generation::TokenOutput>> out;
    for (int i = 0; i < 1000 && engine.hasUnfinished(); ++i) {
      for (generation::TokenOutput& o : engine.step()) out[o.id].push_back(std::move(o));
    }
    return out;
  }
  static void expectScores(const generation::TokenOutput& first, const std::vector<int32_t>& prompt) {
    const auto expected = expectedScores(prompt);
    ASSERT_EQ(first.prompt_logprobs.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      const generation::PromptTokenLogprob& got = first.prompt_logprobs[i];
      EXPECT_EQ(got.token, prompt[i + 1]) << i;
      EXPECT_FLOAT_EQ(got.logprob, expected[i].first) << i;
      EXPECT_EQ(got.rank, expected[i].second) << i;
    }
  }

  NextTokenModel model_;
};

TEST_F(EnginePromptLogprobsTest, ScoresEveryPromptTokenAfterTheFirstWithTheFirstOutput) {
  Engine engine(config(), model_);
  const std::vector<int32_t> prompt = {1, 2, 3, 5, 6, 7};
  ASSERT_TRUE(engine.addRequest(1, prompt, scoring(/*top_n=*/2, /*max_tokens=*/3)).ok());
  const auto out = run(engine);
  const std::vector<generation::TokenOutput>& outputs = out.at(1);
  ASSERT_EQ(outputs.size(), 3u);
  expectScores(outputs[0], prompt);
  // the top 2 at each position: the favored token, then the lowest other id.
  const generation::PromptTokenLogprob& third = outputs[0].prompt_logprobs[2];  // token 5 after 3
  ASSERT_EQ(third.top_logprobs.size(), 2u);
  EXPECT_EQ(third.top_logprobs[0], (generation::TokenLogprob{4, kFavored}));
  EXPECT_EQ(third.top_logprobs[1], (generation::TokenLogprob{0, kOther}));
  EXPECT_TRUE(outputs[1].prompt_logprobs.empty());
  EXPECT_TRUE(outputs[2].prompt_logprobs.empty());
  // the prompt's chunks of 4 and 2 asked for every row; decodes for one.
  EXPECT_EQ(model_.scored_rows_per_step, (std::vector<int>{4, 2, 0, 0}));
}

TEST_F(EnginePromptLogprobsTest, AOneTokenPromptHasNothingToScore) {
  Engine engine(config(), model_);
  ASSERT_TRUE(engine.addRequest(1, {3}, scoring(1)).ok());
  const auto out = run(engine);
  ASSERT_EQ(out.at(1).size(), 1u);
  EXPECT_TRUE(out.at(1)[0].prompt_logprobs.empty());
  EXPECT_EQ(model_.scored_rows_per_step, (std::vector<int>{0}));
}

TEST_F(EnginePromptLogprobsTest, AScoringRequestComputesItsPromptWholeNotFromTheCache) {
  Engine engine(config(), model_);
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 0, 1, 2, 3, 4, 5};
  generation::SamplingParams plain = scoring(0);
  plain.prompt_logprobs.reset();
  ASSERT_TRUE(engine.addRequest(1, prompt, plain).ok());
  run(engine);
  ASSERT_TRUE(engine.addRequest(2, prompt, scoring(0)).ok());
  const auto scored = run(engine);
  EXPECT_EQ(scored.at(2)[0].num_cached_tokens, 0);
  expectScores(scored.at(2)[0], prompt);
  // its blocks went to the cache all the same: a plain request hits them.
  ASSERT_TRUE(engine.addRequest(3, prompt, plain).ok());
  EXPECT_EQ(run(engine).at(3)[0].num_cached_tokens, 8);
}

TEST_F(EnginePromptLogprobsTest, NoStepScoresMoreThanMaxPromptLogprobRows) {
  EngineConfig c = config();
  c.scheduler.max_prompt_logprob_rows = 3;
  Engine engine(c, model_);
  const std::vector<int32_t> a = {1, 2, 3, 4, 5, 6, 7, 0, 1, 2};
  const std::vector<int32_t> b = {7, 6, 5, 4, 3, 2, 1};
  ASSERT_TRUE(engine.addRequest(1, a, scoring(1)).ok());
  ASSERT_TRUE(engine.addRequest(2, b, scoring(1)).ok());
  const auto out = run(engine);
  expectScores(out.at(1)[0], a);
  expectScores(out.at(2)[0], b);
  for (int rows : model_.scored_rows_per_step) EXPECT_LE(rows, 3);
}

TEST_F(EnginePromptLogprobsTest, APreemptedScoringRequestScoresEachTokenOnce) {
  // 5 blocks of 4, one prompt token scored a step: the growing plain
  // request preempts the newer scoring one in the middle of its prompt.
  EngineConfig c = config();
  c.num_blocks = 5;
  c.scheduler.max_prompt_logprob_rows = 1;
  Engine engine(c, model_);
  generation::SamplingParams plain = scoring(0, /*max_tokens=*/14);
  plain.prompt_logprobs.reset();
  plain.ignore_eos = true;
  ASSERT_TRUE(engine.addRequest(1, {1, 2}, plain).ok());
  const std::vector<int32_t> prompt = {2, 3, 4, 6, 7, 0, 1, 2, 3, 5, 6, 7, 1};
  ASSERT_TRUE(engine.addRequest(2, prompt, scoring(1, /*max_tokens=*/2)).ok());
  const auto out = run(engine);
  ASSERT_GT(engine.scheduler().numPreemptions(), 0);
  ASSERT_EQ(out.at(2).size(), 2u);
  expectScores(out.at(2)[0], prompt);
  EXPECT_EQ(out.at(1).size(), 14u);
}

}  // namespace
}  // namespace tandem::engine
