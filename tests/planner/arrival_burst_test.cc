// An interval's busiest window and its gaps' variability, on arrival times
// chosen by hand.
#include "planner/arrival_burst.h"

#include <vector>

#include "gtest/gtest.h"

namespace tandem::planner {
namespace {

TEST(ArrivalBurstTest, EvenArrivalsHaveNoGapVariabilityAndTheirMeanRate) {
  std::vector<double> t;
  for (int i = 0; i < 100; ++i) t.push_back(0.1 * i);  // 10 a second for 10 s
  const ArrivalBurst b = arrivalBurst(t, 5);
  EXPECT_NEAR(b.peak_rate, 10, 0.2 + 1e-9);  // 50 or 51 in any 5 s
  EXPECT_NEAR(b.scv, 0, 1e-9);
}

TEST(ArrivalBurstTest, AStepWithinTheIntervalIsSeenAtItsBusiestHalf) {
  // 1 a second for the first 5 s, 20 a second for the last 5: a mean of
  // 10.5, a busiest half of 20.
  std::vector<double> t;
  for (int i = 0; i < 5; ++i) t.push_back(i);
  for (int i = 0; i < 100; ++i) t.push_back(5 + 0.05 * i);
  const ArrivalBurst b = arrivalBurst(t, 5);
  EXPECT_NEAR(b.peak_rate, 20, 1e-9);
  EXPECT_NEAR(b.scv, 0, 1e-9);  // within that half, even
}

TEST(ArrivalBurstTest, ClumpsRaiseTheScv) {
  // pairs 1 ms apart every second: gaps alternate 0.001 and 0.999.
  std::vector<double> t;
  for (int i = 0; i < 10; ++i) {
    t.push_back(i);
    t.push_back(i + 0.001);
  }
  const ArrivalBurst b = arrivalBurst(t, 10);
  // 19 gaps: 10 of 0.001 and 9 of 0.999: mean 9.001 / 19, mean square
  // (10e-6 + 9 x 0.998001) / 19, scv = mean square / mean^2 - 1 = 1.1064.
  EXPECT_NEAR(b.scv, 1.1064, 1e-4);
  EXPECT_EQ(arrivalBurst(std::vector<double>{1.0, 2.0}, 5).scv, 0);  // one gap: not measured
  EXPECT_EQ(arrivalBurst(std::vector<double>{}, 5).peak_rate, 0);
}

}  // namespace
}  // namespace tandem::planner
