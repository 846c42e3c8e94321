#include "common/backoff.h"

#include <set>

#include "gtest/gtest.h"

namespace tandem {
namespace {

using std::chrono::milliseconds;

TEST(BackoffTest, DoublesTheBoundUpToTheCapAndDrawsWithinIt) {
  Backoff backoff(milliseconds(100), milliseconds(1000), /*seed=*/7);
  const int64_t bounds[] = {100, 200, 400, 800, 1000, 1000, 1000};
  for (int64_t bound : bounds) {
    EXPECT_EQ(backoff.bound().count(), bound);
    const milliseconds delay = backoff.next();
    EXPECT_GE(delay.count(), bound / 2);
    EXPECT_LE(delay.count(), bound);
  }
  backoff.reset();
  EXPECT_EQ(backoff.bound().count(), 100);
}

TEST(BackoffTest, JittersDrawsUnderTheSameBound) {
  Backoff backoff(milliseconds(1000), milliseconds(1000), /*seed=*/11);
  std::set<int64_t> delays;
  for (int i = 0; i < 20; ++i) delays.insert(backoff.next().count());
  EXPECT_GT(delays.size(), 10u);  // 20 draws out of 501 values
}

TEST(BackoffTest, TakesAnInitialAboveTheCapAsTheCap) {
  Backoff backoff(milliseconds(500), milliseconds(100), /*seed=*/3);
  EXPECT_EQ(backoff.bound().count(), 500);
  backoff.next();
  EXPECT_EQ(backoff.bound().count(), 500);
}

}  // namespace
}  // namespace tandem
