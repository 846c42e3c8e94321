// The burst envelope's arithmetic on short series computed by hand.
#include "planner/demand_history.h"

#include "gtest/gtest.h"

namespace tandem::planner {
namespace {

TEST(DemandHistoryTest, PeakQuantileIsOverTheMaximaOfEveryRunOfTheWindow) {
  DemandHistory h(10);
  EXPECT_EQ(h.peakQuantile(3, 1), 0);
  for (double d : {1, 5, 2, 2, 2, 9, 1}) h.add(d);
  // runs of 3: {1,5,2} {5,2,2} {2,2,2} {2,2,9} {2,9,1} -> maxima 5 5 2 9 9.
  EXPECT_EQ(h.peakQuantile(3, 1), 9);
  EXPECT_EQ(h.peakQuantile(3, 0.5), 5);  // the 3rd of 5 sorted: 2 5 5 9 9
  EXPECT_EQ(h.peakQuantile(3, 0), 2);
  // a window longer than the history: its maximum.
  EXPECT_EQ(h.peakQuantile(20, 0), 9);
}

TEST(DemandHistoryTest, ForgetsBeyondItsCapacity) {
  DemandHistory h(3);
  for (double d : {100, 1, 2, 3}) h.add(d);
  EXPECT_EQ(h.size(), 3u);
  EXPECT_EQ(h.peakQuantile(1, 1), 3);
  EXPECT_EQ(h.last(), 3);
}

TEST(DemandHistoryTest, RiseQuantileIsHowMuchTheDemandRoseWithinTheWindowAfterEachInterval) {
  DemandHistory h(10);
  EXPECT_EQ(h.riseQuantile(2, 1), 0);
  for (double d : {2, 2, 10, 3, 3}) h.add(d);
  // runs of 2 after each interval that end within the history:
  // after 2: max(2, 10) - 2 = 8; after 2: max(10, 3) - 2 = 8; after 10: 3 - 10 = -7.
  EXPECT_EQ(h.riseQuantile(2, 1), 8);
  EXPECT_EQ(h.riseQuantile(2, 0), -7);
  // with no run ending within the history, the partial ones.
  DemandHistory short_history(10);
  short_history.add(1);
  short_history.add(4);
  EXPECT_EQ(short_history.riseQuantile(5, 1), 3);
}

}  // namespace
}  // namespace tandem::planner
