// The load predictors on constructed series: a constant, a ramp, a step and
// a seasonal pattern.
#include "planner/predictors.h"

#include <cmath>

#include "gtest/gtest.h"
#include "planner/holt_winters_predictor.h"
#include "planner/moving_average_predictor.h"

namespace tandem::planner {
namespace {

LoadSample sample(double rate, double isl = 1000, double osl = 200) {
  LoadSample s;
  s.request_rate = rate;
  s.mean_input_tokens = isl;
  s.mean_output_tokens = osl;
  return s;
}

TEST(PredictorsTest, FactoryKnowsTheThreeNamesAndNoOther) {
  for (const std::string& name : predictorNames()) {
    std::unique_ptr<LoadPredictor> p = makePredictor(name);
    ASSERT_NE(p, nullptr) << name;
    EXPECT_EQ(p->name(), name);
    EXPECT_EQ(p->predict().request_rate, 0) << "a zero sample before any observation";
  }
  EXPECT_EQ(predictorNames().size(), 3u);
  EXPECT_EQ(makePredictor("arima"), nullptr);
}

TEST(PredictorsTest, ConstantRepeatsTheLastInterval) {
  std::unique_ptr<LoadPredictor> p = makePredictor("constant");
  p->observe(sample(3));
  p->observe(sample(7, 500, 40));
  EXPECT_EQ(p->predict().request_rate, 7);
  EXPECT_EQ(p->predict().mean_input_tokens, 500);
  EXPECT_EQ(p->predict().mean_output_tokens, 40);
}

TEST(PredictorsTest, MovingAverageAveragesTheWindowAndIgnoresIdleIntervalsForLengths) {
  MovingAveragePredictor p(3);
  p.observe(sample(100));  // falls out of the window
  p.observe(sample(2, 1000));
  p.observe(sample(0, 0));  // idle: says nothing about lengths
  p.observe(sample(4, 4000));
  EXPECT_DOUBLE_EQ(p.predict().request_rate, 2);
  // rate-weighted: (2 x 1000 + 4 x 4000) / 6
  EXPECT_DOUBLE_EQ(p.predict().mean_input_tokens, 3000);
}

TEST(PredictorsTest, HoltWintersFollowsARampWhereTheOthersLag) {
  HoltWintersPredictor hw;
  std::unique_ptr<LoadPredictor> ma = makePredictor("moving-average");
  for (int i = 1; i <= 30; ++i) {
    hw.observe(sample(i));
    ma->observe(sample(i));
  }
  // next is 31: the trend closes in on it, a 6-interval average lags by 3.5.
  EXPECT_NEAR(hw.predict().request_rate, 31, 0.1);
  EXPECT_NEAR(ma->predict().request_rate, 27.5, 1e-9);
  // three intervals ahead.
  HoltWintersPredictor ahead(HoltWintersOptions{.horizon = 3});
  for (int i = 1; i <= 30; ++i) ahead.observe(sample(i));
  EXPECT_NEAR(ahead.predict().request_rate, 33, 0.1);
}

TEST(PredictorsTest, HoltWintersSettlesAfterAStepAndNeverPredictsBelowZero) {
  HoltWintersPredictor hw;
  for (int i = 0; i < 10; ++i) hw.observe(sample(10));
  for (int i = 0; i < 30; ++i) hw.observe(sample(20));
  EXPECT_NEAR(hw.predict().request_rate, 20, 0.05);
  HoltWintersPredictor falling;
  for (int i = 10; i >= 0; --i) falling.observe(sample(i * 10));
  for (int i = 0; i < 3; ++i) falling.observe(sample(0));
  EXPECT_GE(falling.predict().request_rate, 0);
}

TEST(PredictorsTest, HoltWintersWithASeasonPredictsThePatternsNextPoint) {
  const double pattern[4] = {10, 30, 50, 30};
  HoltWintersPredictor hw(HoltWintersOptions{.season_length = 4});
  for (int i = 0; i < 40; ++i) hw.observe(sample(pattern[i % 4]));
  // 40 observed: the next is position 0 of the season.
  EXPECT_NEAR(hw.predict().request_rate, 10, 1);
  hw.observe(sample(10));
  EXPECT_NEAR(hw.predict().request_rate, 30, 1);
  // without the season, the level sits between the peaks.
  HoltWintersPredictor flat;
  for (int i = 0; i < 41; ++i) flat.observe(sample(pattern[i % 4]));
  EXPECT_GT(std::abs(flat.predict().request_rate - 30), 3);
}

}  // namespace
}  // namespace tandem::planner
