// The M/M/N arithmetic against values computed by hand.
#include "planner/queue_model.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace tandem::planner {
namespace {

TEST(QueueModelTest, ErlangCMatchesTheClosedForms) {
  // one worker: the arrival waits with probability rho.
  EXPECT_NEAR(erlangC(1, 0.5), 0.5, 1e-12);
  // two workers at a = 1: C = (a^2/2 x 2/(2-1)) / (1 + a + that) = 1/3.
  EXPECT_NEAR(erlangC(2, 1), 1.0 / 3, 1e-12);
  EXPECT_EQ(erlangC(2, 2), 1);
  EXPECT_EQ(erlangC(4, 0), 0);
}

TEST(QueueModelTest, WaitQuantileAndTheWorkersItNeeds) {
  // M/M/1 at rho 0.5, service 1 s: P(W > t) = 0.5 e^{-0.5 t}; p99 at 2 ln 50.
  EXPECT_NEAR(waitQuantileS(1, 0.5, 1, 0.99), 2 * std::log(50.0), 1e-9);
  EXPECT_EQ(waitQuantileS(1, 0.5, 1, 0.4), 0);  // most never wait
  EXPECT_TRUE(std::isinf(waitQuantileS(2, 3, 1, 0.99)));
  EXPECT_EQ(workersForWait(0, 1, 1, 0.99), 0);
  // 10 req/s of 0.1 s: offered 1; the p99 wait within 0.1 s needs 4 workers.
  const int n = workersForWait(10, 0.1, 0.1, 0.99);
  EXPECT_LE(waitQuantileS(n, 10, 0.1, 0.99), 0.1);
  EXPECT_GT(waitQuantileS(n - 1, 10, 0.1, 0.99), 0.1);
  EXPECT_EQ(n, 4);
  // pooling: ten times the traffic needs far fewer than ten times the workers.
  EXPECT_LT(workersForWait(100, 0.1, 0.1, 0.99), 10 * n);
}

TEST(QueueModelTest, MgnStretchesTheWaitByServiceVariabilityAndServesClassesByTheirSlack) {
  // scv 1 is M/M/N: M/M/1 at rho 0.5, service 1 s: P(W > t) = 0.5 e^{-0.5 t}, mean wait 1 s.
  EXPECT_NEAR(mgnWaitTail(1, 0.5, 1, 1, 2), 0.5 * std::exp(-1.0), 1e-12);
  EXPECT_NEAR(mgnMeanWaitS(1, 0.5, 1, 1), 1, 1e-12);
  // scv 3 (heavy-tailed prompts): twice the mean wait, a slower tail.
  EXPECT_NEAR(mgnMeanWaitS(1, 0.5, 1, 3), 2, 1e-12);
  EXPECT_NEAR(mgnWaitTail(1, 0.5, 1, 3, 2), 0.5 * std::exp(-0.5), 1e-12);
  EXPECT_EQ(mgnWaitTail(1, 2, 1, 1, 5), 1);
  // a class whose own service leaves no slack meets the SLO only unqueued;
  // one over the SLO never does.
  const std::vector<ServiceClass> c = {{0.9, 0.1}, {0.05, 1.0}, {0.05, 2.0}};
  const double a = prefillAttainment(4, 5, c, 1.0);
  EXPECT_LT(a, 0.95);
  EXPECT_GT(a, 0.9 * (1 - mgnWaitTail(4, 5, 0.2, 0, 0)));
  // the fewest workers: the 5% over the SLO leave 95% reachable, aimed at less a tenth of 1%.
  const int n = workersForAttainment(5, c, 1.0, 0.99);
  EXPECT_GE(prefillAttainment(n, 5, c, 1.0), 0.949);
  EXPECT_LT(prefillAttainment(n - 1, 5, c, 1.0), 0.949);
  EXPECT_EQ(workersForAttainment(0, c, 1.0, 0.99), 0);
}

TEST(QueueModelTest, BurstierArrivalsStretchTheWaitLikeVariableService) {
  // G/G/N: (ca^2 + cs^2) / 2. Poisson arrivals and exponential service
  // (1 + 1) are M/M/N; arrivals of scv 3 double the mean wait and halve the
  // tail's decay, as service of scv 3 does.
  EXPECT_NEAR(mgnMeanWaitS(1, 0.5, 1, 1, 3), 2, 1e-12);
  EXPECT_NEAR(mgnWaitTail(1, 0.5, 1, 1, 2, 3), 0.5 * std::exp(-0.5), 1e-12);
  const std::vector<ServiceClass> c = {{1.0, 0.1}};
  EXPECT_GT(workersForAttainment(50, c, 0.3, 0.99, 4), workersForAttainment(50, c, 0.3, 0.99, 1));
}

}  // namespace
}  // namespace tandem::planner
