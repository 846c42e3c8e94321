#include "generation/sampling_params.h"

#include <string>

#include "gtest/gtest.h"

namespace tandem::generation {
namespace {

class SamplingParamsTest : public ::testing::Test {
 protected:
  // the message of validate() for params changed by `edit`, "" when ok.
  template <typename Edit>
  std::string errorOf(Edit edit) {
    SamplingParams p;
    edit(p);
    const absl::Status s = p.validate();
    if (!s.ok()) {
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    }
    return std::string(s.message());
  }
};

TEST_F(SamplingParamsTest, DefaultsAreValidAndNotGreedy) {
  SamplingParams p;
  EXPECT_TRUE(p.validate().ok());
  EXPECT_FALSE(p.isGreedy());
  EXPECT_EQ(p.max_tokens, 16);
}

TEST_F(SamplingParamsTest, ZeroTemperatureOrTopKOneIsGreedy) {
  SamplingParams p;
  p.temperature = 0.0f;
  EXPECT_TRUE(p.isGreedy());
  p.temperature = 0.7f;
  p.top_k = 1;
  EXPECT_TRUE(p.isGreedy());
}

TEST_F(SamplingParamsTest, RejectsOutOfRangeValuesWithClearMessages) {
  EXPECT_EQ(errorOf([](auto& p) { p.temperature = -0.5f; }),
            "temperature must be a number >= 0, got -0.5");
  EXPECT_EQ(errorOf([](auto& p) { p.top_k = -2; }),
            "top_k must be -1 or 0 (disabled) or at least 1, got -2");
  EXPECT_EQ(errorOf([](auto& p) { p.top_p = 0.0f; }), "top_p must be in (0, 1], got 0");
  EXPECT_EQ(errorOf([](auto& p) { p.top_p = 1.5f; }), "top_p must be in (0, 1], got 1.5");
  EXPECT_EQ(errorOf([](auto& p) { p.min_p = -0.1f; }),
            "min_p must be in [0, 1], got -0.1");
  EXPECT_EQ(errorOf([](auto& p) { p.repetition_penalty = 0.0f; }),
            "repetition_penalty must be a number > 0, got 0");
  EXPECT_EQ(errorOf([](auto& p) { p.presence_penalty = 2.5f; }),
            "presence_penalty must be in [-2, 2], got 2.5");
  EXPECT_EQ(errorOf([](auto& p) { p.frequency_penalty = -3.0f; }),
            "frequency_penalty must be in [-2, 2], got -3");
  EXPECT_EQ(errorOf([](auto& p) { p.max_tokens = 0; }), "max_tokens must be at least 1, got 0");
  EXPECT_EQ(errorOf([](auto& p) { p.logprobs = 21; }), "logprobs must be in [0, 20], got 21");
  EXPECT_EQ(errorOf([](auto& p) { p.stop_token_ids = {3, -1}; }),
            "stop_token_ids must be >= 0, got -1");
}

TEST_F(SamplingParamsTest, AcceptsTheEdgesOfEachRange) {
  EXPECT_EQ(errorOf([](auto& p) {
              p.temperature = 0.0f;
              p.top_k = 0;
              p.top_p = 1.0f;
              p.min_p = 1.0f;
              p.presence_penalty = -2.0f;
              p.frequency_penalty = 2.0f;
              p.max_tokens = 1;
              p.logprobs = 0;
            }),
            "");
  EXPECT_EQ(errorOf([](auto& p) { p.top_k = -1; }), "");
}

}  // namespace
}  // namespace tandem::generation

namespace tandem::generation {
namespace {

TEST(SamplingParamsLogitBiasTest, RefusesBiasesOutOfRangeNegativeIdsAndTooManyEntries) {
  SamplingParams p;
  p.logit_bias = {{5, 100.0f}, {6, -100.0f}};
  EXPECT_TRUE(p.validate().ok());
  p.logit_bias = {{5, 100.5f}};
  EXPECT_EQ(p.validate().message(), "logit_bias values must be in [-100, 100], got 100.5 for token 5");
  p.logit_bias = {{-1, 1.0f}};
  EXPECT_EQ(p.validate().message(), "logit_bias token ids must be >= 0, got -1");
  p.logit_bias.assign(SamplingParams::kMaxLogitBias + 1, {1, 1.0f});
  EXPECT_EQ(p.validate().message(), "logit_bias may hold at most 1024 entries, got 1025");
}

}  // namespace
}  // namespace tandem::generation
