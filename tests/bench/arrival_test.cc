// Arrival processes: the mean rate, the burstiness and trace replay.
#include "bench/loadgen/arrival.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tandem::bench {
namespace {

// mean and coefficient of variation of the gaps of `n` arrivals.
std::pair<double, double> gapStats(ArrivalProcess& a, int n) {
  BenchRequest req;
  double prev = *a.next(req), sum = 0, sum2 = 0;
  for (int i = 0; i < n; ++i) {
    double t = *a.next(req);
    EXPECT_GE(t, prev);
    double g = t - prev;
    sum += g;
    sum2 += g * g;
    prev = t;
  }
  double mean = sum / n;
  return {mean, std::sqrt(sum2 / n - mean * mean) / mean};
}

TEST(ArrivalTest, PoissonGapsAverageOneOverTheRate) {
  auto a = poissonArrivals(8.0, 1);
  BenchRequest req;
  auto [mean, cv] = gapStats(*a, 40000);
  // 40000 exponential gaps: the mean is within 2% with overwhelming odds.
  EXPECT_NEAR(mean, 0.125, 0.125 * 0.02);
  EXPECT_NEAR(cv, 1.0, 0.03);
}

TEST(ArrivalTest, GammaBurstinessKeepsTheRateAndWidensTheGaps) {
  auto a = gammaArrivals(8.0, 0.25, 2);
  auto [mean, cv] = gapStats(*a, 40000);
  EXPECT_NEAR(mean, 0.125, 0.125 * 0.05);
  EXPECT_NEAR(cv, 2.0, 0.1);  // cv of gamma(k) is 1/sqrt(k)
  EXPECT_EQ(a->describe(), "gamma(rate=8/s, burstiness=0.25)");
}

TEST(ArrivalTest, FirstRequestGoesAtOnce) {
  auto a = poissonArrivals(1.0, 3);
  EXPECT_EQ(*a->next(BenchRequest{}), 0.0);
}

TEST(ArrivalTest, TraceArrivalsDivideTimestampsBySpeedup) {
  auto a = traceArrivals(4.0);
  BenchRequest r;
  r.timestamp_s = 0;
  EXPECT_EQ(*a->next(r), 0.0);
  r.timestamp_s = 10;
  EXPECT_EQ(*a->next(r), 2.5);
  r.timestamp_s = 8;  // out of order: never earlier than the previous
  EXPECT_EQ(*a->next(r), 2.5);
  r.timestamp_s.reset();
  EXPECT_EQ(*a->next(r), 2.5);
}

TEST(ArrivalTest, ClosedLoopHasNoTimes) { EXPECT_FALSE(closedLoopArrivals()->next(BenchRequest{})); }

}  // namespace
}  // namespace tandem::bench
