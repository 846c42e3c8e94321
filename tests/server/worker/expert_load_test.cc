#include "server/worker/expert_load.h"

#include "gtest/gtest.h"

namespace tandem::worker {
namespace {

TEST(ExpertLoadTest, SummarizesEveryLayersExpertsInSevenNumbers) {
  // two layers of four experts: layer 0 balanced, layer 1 all on expert 2
  const ExpertLoad load = summarizeExpertLoad({5, 5, 5, 5, 0, 0, 20, 0}, 4);
  EXPECT_EQ(load.routed, 40);
  EXPECT_EQ(load.idle, 3);
  EXPECT_DOUBLE_EQ(load.ratio[0], 0.0);  // the idle experts of layer 1
  EXPECT_DOUBLE_EQ(load.ratio[1], 1.0);  // the median pair: balanced
  EXPECT_DOUBLE_EQ(load.ratio[4], 4.0);  // the hottest: 20 of a mean of 5
}

TEST(ExpertLoadTest, ALayerThatRoutedNothingCountsOnlyAsIdle) {
  const ExpertLoad load = summarizeExpertLoad({0, 0, 3, 1}, 2);
  EXPECT_EQ(load.routed, 4);
  EXPECT_EQ(load.idle, 2);
  EXPECT_DOUBLE_EQ(load.ratio[0], 0.5);
  EXPECT_DOUBLE_EQ(load.ratio[4], 1.5);
}

TEST(ExpertLoadTest, NothingRoutedIsAllZeros) {
  const ExpertLoad load = summarizeExpertLoad({}, 8);
  EXPECT_EQ(load.routed, 0);
  EXPECT_DOUBLE_EQ(load.ratio[4], 0.0);
}

}  // namespace
}  // namespace tandem::worker
