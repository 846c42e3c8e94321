#include "server/engine/sampler.h"

#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace tandem::engine {
namespace {

class SamplerTest : public ::testing::Test {
 protected:
  int32_t sampleOne(const std::vector<float>& logits, const generation::SamplingParams& params,
                    SamplerRng& rng) {
    return sampler_.sample(logits, params, history_, rng).token;
  }

  // logits whose softmax is exactly `probs`.
  static std::vector<float> logitsOf(const std::vector<double>& probs) {
    std::vector<float> out;
    for (double p : probs) out.push_back(static_cast<float>(std::log(p)));
    return out;
  }

  Sampler sampler_;
  TokenHistory history_;
};

TEST_F(SamplerTest, RngIsSplitmix64) {
  // reference outputs of splitmix64 seeded with 0 (Vigna's splitmix64.c).
  SamplerRng rng(0);
  EXPECT_EQ(rng.next(), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(rng.next(), 0x6e789e6aa1b965f4ULL);
  EXPECT_EQ(rng.next(), 0x06c45d188009454fULL);
}

TEST_F(SamplerTest, GreedyPicksExactArgmaxAndLowestIdOnTies) {
  generation::SamplingParams p;
  p.temperature = 0.0f;
  SamplerRng rng(1);
  EXPECT_EQ(sampleOne({0.5f, 2.0f, -1.0f, 1.9999f}, p, rng), 1);
  EXPECT_EQ(sampleOne({1.0f, 5.0f, 3.0f, 5.0f}, p, rng), 1);
  EXPECT_EQ(sampleOne({-3.0f, -3.0f}, p, rng), 0);
}

TEST_F(SamplerTest, GreedyConsumesNoRandomness) {
  generation::SamplingParams p;
  p.temperature = 0.0f;
  SamplerRng rng(7);
  SamplerRng untouched(7);
  sampleOne({1.0f, 2.0f}, p, rng);
  EXPECT_EQ(rng.next(), untouched.next());
}

TEST_F(SamplerTest, TopKOneEqualsGreedyAtAnyTemperature) {
  SamplerRng logit_rng(3);
  for (uint64_t seed = 0; seed < 50; ++seed) {
    std::vector<float> logits(100);
    for (float& x : logits) x = static_cast<float>(logit_rng.uniform() * 10.0);
    generation::SamplingParams greedy;
    greedy.temperature = 0.0f;
    generation::SamplingParams top1;
    top1.temperature = 1.5f;
    top1.top_k = 1;
    SamplerRng rng(seed);
    EXPECT_EQ(sampleOne(logits, top1, rng), sampleOne(logits, greedy, rng));
  }
}

TEST_F(SamplerTest, SameSeedGivesSameTokensAndOtherSeedsDiffer) {
  const std::vector<float> logits(64, 0.0f);  // uniform: every draw matters.
  generation::SamplingParams p;
  auto run = [&](uint64_t seed) {
    SamplerRng rng(seed);
    std::vector<int32_t> out;
    for (int i = 0; i < 100; ++i) out.push_back(sampleOne(logits, p, rng));
    return out;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

TEST_F(SamplerTest, DrawsFollowTheSoftmaxDistribution) {
  const std::vector<double> probs = {0.1, 0.2, 0.3, 0.4};
  const auto logits = logitsOf(probs);
  generation::SamplingParams p;
  SamplerRng rng(2024);
  constexpr int kDraws = 20000;
  std::array<int, 4> counts{};
  for (int i = 0; i < kDraws; ++i) ++counts[sampleOne(logits, p, rng)];
  double chi2 = 0.0;
  for (int t = 0; t < 4; ++t) {
    const double expected = probs[t] * kDraws;
    chi2 += (counts[t] - expected) * (counts[t] - expected) / expected;
  }
  // 3 degrees of freedom: 16.27 is the 0.1% critical value.
  EXPECT_LT(chi2, 16.27) << counts[0] << " " << counts[1] << " " << counts[2] << " "
                         << counts[3];
}

TEST_F(SamplerTest, TemperatureFlattensTheDistribution) {
  // at temperature 2 the probabilities 0.2/0.8 become sqrt-proportional: 1/3, 2/3.
  const auto logits = logitsOf({0.2, 0.8});
  generation::SamplingParams p;
  p.temperature = 2.0f;
  SamplerRng rng(5);
  int zeros = 0;
  for (int i = 0; i < 30000; ++i) zeros += sampleOne(logits, p, rng) == 0;
  EXPECT_NEAR(zeros / 30000.0, 1.0 / 3.0, 0.015);
}

TEST_F(SamplerTest, TopKKeepsOnlyTheKMostLikely) {
  const auto logits = logitsOf({0.3, 0.05, 0.25, 0.4});
  generation::SamplingParams p;
  p.top_k = 2;
  SamplerRng rng(9);
  std::array<int, 4> counts{};
  for (int i = 0; i < 2000; ++i) ++counts[sampleOne(logits, p, rng)];
  EXPECT_EQ(counts[1], 0);
  EXPECT_EQ(counts[2], 0);
  EXPECT_GT(counts[0], 0);
  EXPECT_GT(counts[3], 0);
}

TEST_F(SamplerTest, TopPKeepsTheSmallestSetReachingP) {
  // sorted: 0.5 (id 2), 0.3 (id 0), 0.15 (id 3), 0.05 (id 1). 0.75 needs ids 2 and 0.
  const auto logits = logitsOf({0.3, 0.05, 0.5, 0.15});
  generation::SamplingParams p;
  p.top_p = 0.75f;
  SamplerRng rng(11);
  std::array<int, 4> counts{};
  for (int i = 0; i < 2000; ++i) ++counts[sampleOne(logits, p, rng)];
  EXPECT_EQ(counts[1], 0);
  EXPECT_EQ(counts[3], 0);
  EXPECT_GT(counts[0], 0);
  EXPECT_GT(counts[2], 0);
  // a tiny top_p keeps only the most likely token.
  p.top_p = 0.01f;
  for (int i = 0; i < 100; ++i) EXPECT_EQ(sampleOne(logits, p, rng), 2);
}

TEST_F(SamplerTest, MinPDropsTokensBelowFractionOfTheTop) {
  // relative to the top (0.5): 0.3 -> 0.6, 0.15 -> 0.3, 0.05 -> 0.1.
  const auto logits = logitsOf({0.3, 0.05, 0.5, 0.15});
  generation::SamplingParams p;
  p.min_p = 0.25f;
  SamplerRng rng(13);
  std::array<int, 4> counts{};
  for (int i = 0; i < 3000; ++i) ++counts[sampleOne(logits, p, rng)];
  EXPECT_EQ(counts[1], 0);
  EXPECT_GT(counts[0], 0);
  EXPECT_GT(counts[2], 0);
  EXPECT_GT(counts[3], 0);
  p.min_p = 0.7f;
  for (int i = 0; i < 100; ++i) EXPECT_EQ(sampleOne(logits, p, rng), 2);
}

TEST_F(SamplerTest, RepetitionPenaltyDividesPositiveAndMultipliesNegativeSeenLogits) {
  std::vector<float> logits = {2.0f, -2.0f, 4.0f, -1.0f, 3.0f};
  generation::SamplingParams p;
  p.repetition_penalty = 2.0f;
  const std::vector<int32_t> prompt = {0, 1, 0, 99};  // 99 is outside the vocab.
  const std::vector<int32_t> output = {3, 0};
  sampler_.applyPenalties(logits, p, {prompt, output});
  EXPECT_EQ(logits, (std::vector<float>{1.0f, -4.0f, 4.0f, -2.0f, 3.0f}));
}

TEST_F(SamplerTest, PresenceAndFrequencyPenaltiesApplyToOutputTokensOnly) {
  std::vector<float> logits = {1.0f, 1.0f, 1.0f, 1.0f};
  generation::SamplingParams p;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  const std::vector<int32_t> prompt = {0, 0, 0};
  const std::vector<int32_t> output = {2, 3, 2, 2};
  sampler_.applyPenalties(logits, p, {prompt, output});
  // token 2: 1 - (3 * 0.25 + 0.5); token 3: 1 - (0.25 + 0.5).
  EXPECT_EQ(logits, (std::vector<float>{1.0f, 1.0f, -0.25f, 0.25f}));
  // scratch state is reset: a second call with no output changes nothing.
  std::vector<float> again = {1.0f, 1.0f, 1.0f, 1.0f};
  sampler_.applyPenalties(again, p, {prompt, {}});
  EXPECT_EQ(again, (std::vector<float>{1.0f, 1.0f, 1.0f, 1.0f}));
}

TEST_F(SamplerTest, PenaltiesSteerGreedyChoice) {
  generation::SamplingParams p;
  p.temperature = 0.0f;
  p.repetition_penalty = 1.5f;
  const std::vector<int32_t> output = {0};
  SamplerRng rng(0);
  EXPECT_EQ(sampler_.sample(std::vector<float>{3.0f, 2.5f}, p, {{}, output}, rng).token, 1);
}

TEST_F(SamplerTest, LogprobsComeFromRawLogitsSortedMostLikelyFirst) {
  const std::vector<float> logits = {1.0f, 3.0f, 3.0f, 0.0f, 2.0f};
  generation::SamplingParams p;
  p.temperature = 0.0f;
  p.repetition_penalty = 2.0f;  // must not change the reported logprobs.
  p.logprobs = 5;
  SamplerRng rng(0);
  const std::vector<int32_t> output = {1};
  const SampleResult r = sampler_.sample(logits, p, {{}, output}, rng);
  EXPECT_EQ(r.token, 2);  // 1's logit was halved.
  double lse = 0.0;
  for (float x : logits) lse += std::exp(static_cast<double>(x));
  lse = std::log(lse);
  EXPECT_FLOAT_EQ(r.logprob, static_cast<float>(3.0 - lse));
  ASSERT_EQ(r.top_logprobs.size(), 5u);
  const std::vector<int32_t> order = {1, 2, 4, 0, 3};
  double total = 0.0;
  for (size_t i = 0; i < order.size(); ++i) {
    EXPECT_EQ(r.top_logprobs[i].token, order[i]);
    EXPECT_FLOAT_EQ(r.top_logprobs[i].logprob,
                    static_cast<float>(logits[order[i]] - lse));
    total += std::exp(r.top_logprobs[i].logprob);
  }
  EXPECT_NEAR(total, 1.0, 1e-6);
}

TEST_F(SamplerTest, NoLogprobsRequestedMeansNoTopList) {
  generation::SamplingParams p;
  SamplerRng rng(0);
  EXPECT_TRUE(sampler_.sample(std::vector<float>{1.0f, 2.0f}, p, {}, rng).top_logprobs.empty());
  p.logprobs = 0;
  EXPECT_TRUE(sampler_.sample(std::vector<float>{1.0f, 2.0f}, p, {}, rng).top_logprobs.empty());
}

TEST_F(SamplerTest, LogitBiasIsAddedBeforeGreedyAndSampledDraws) {
  generation::SamplingParams greedy;
  greedy.temperature = 0.0f;
  SamplerRng rng(5);
  const std::vector<float> logits = {3.0f, 1.0f, 2.0f, 0.5f};
  EXPECT_EQ(sampleOne(logits, greedy, rng), 0);
  greedy.logit_bias = {{3, 100.0f}};
  EXPECT_EQ(sampleOne(logits, greedy, rng), 3);
  // -100 on the best token hands greedy the next one.
  greedy.logit_bias = {{0, -100.0f}};
  EXPECT_EQ(sampleOne(logits, greedy, rng), 2);
  // sampled: +100 leaves the other tokens e^-97 of the mass.
  generation::SamplingParams sampled;
  sampled.logit_bias = {{1, 100.0f}};
  for (uint64_t seed = 0; seed < 20; ++seed) {
    SamplerRng r(seed);
    EXPECT_EQ(sampleOne(logits, sampled, r), 1);
  }
  // the logprobs still describe the model's raw logits.
  const SampleResult raw = sampler_.sample(logits, greedy, history_, rng);
  EXPECT_EQ(raw.token, 2);
  EXPECT_LT(raw.logprob, 0.0f);
}

}  // namespace
}  // namespace tandem::engine

namespace tandem::engine {
namespace {

TEST(SamplerMaskTest, OnlyAllowedTokensAreSampledAtAnyTemperature) {
  Sampler sampler;
  std::vector<float> logits(200);
  for (int i = 0; i < 200; ++i) logits[i] = static_cast<float>(i % 17);
  grammar::TokenMask mask(150);  // ids 150..199 lie past the mask: never allowed
  for (int id : {3, 64, 65, 127, 149}) mask.set(id);
  SamplerRng rng(1);
  generation::SamplingParams params;
  for (float t : {0.0f, 0.7f, 1.0f, 2.0f}) {
    params.temperature = t;
    for (int i = 0; i < 200; ++i) {
      const int32_t token = sampler.sample(logits, params, {}, rng, &mask).token;
      EXPECT_TRUE(mask.test(token)) << token;
    }
  }
  // greedy picks the best allowed token, not the best token.
  params.temperature = 0.0f;
  EXPECT_EQ(sampler.sample(logits, params, {}, rng, &mask).token, 65);  // 65 % 17 = 14
}

TEST(SamplerMaskTest, ApplyMaskKeepsAllowedLogitsAndRefusesTheRest) {
  std::vector<float> logits(130, 1.0f);
  grammar::TokenMask mask(130);
  for (int id = 0; id < 64; ++id) mask.set(id);  // a whole word allowed
  mask.set(100);
  Sampler::applyMask(logits, mask);
  for (int id = 0; id < 130; ++id) {
    EXPECT_EQ(logits[id], mask.test(id) ? 1.0f : -std::numeric_limits<float>::infinity()) << id;
  }
}

TEST(SamplerScoreTest, ScoresATokenWithItsLogSoftmaxRankAndTheTopTokens) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f, 0.5f};
  double sum = 0;
  for (float x : logits) sum += std::exp(static_cast<double>(x));
  const double lse = std::log(sum);
  const generation::PromptTokenLogprob scored = Sampler::score(logits, 2, /*top_n=*/3);
  EXPECT_EQ(scored.token, 2);
  EXPECT_FLOAT_EQ(scored.logprob, static_cast<float>(2.0 - lse));
  EXPECT_EQ(scored.rank, 3);  // two tokens (1 and 3) are more likely
  ASSERT_EQ(scored.top_logprobs.size(), 3u);
  EXPECT_EQ(scored.top_logprobs[0].token, 1);  // ties: the lower id first
  EXPECT_EQ(scored.top_logprobs[1].token, 3);
  EXPECT_EQ(scored.top_logprobs[2].token, 2);
  // a tie for the top shares rank 1; no top tokens asked, none given
  const generation::PromptTokenLogprob tied = Sampler::score(logits, 3, 0);
  EXPECT_EQ(tied.rank, 1);
  EXPECT_TRUE(tied.top_logprobs.empty());
}

}  // namespace
}  // namespace tandem::engine
