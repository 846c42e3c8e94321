#include "common/outstanding.h"

#include <atomic>
#include <thread>
#include <utility>

#include "gtest/gtest.h"

namespace tandem {
namespace {

TEST(OutstandingTest, CountsTokensUntilDestroyedAndMovedOnes) {
  Outstanding out;
  EXPECT_EQ(out.count(), 0);
  out.waitNone();  // none out: returns at once
  {
    Outstanding::Token a = out.take();
    Outstanding::Token b = out.take();
    EXPECT_EQ(out.count(), 2);
    Outstanding::Token moved = std::move(a);  // still one object out
    EXPECT_EQ(out.count(), 2);
    b = std::move(moved);  // b's own count ends; it now holds a's
    EXPECT_EQ(out.count(), 1);
  }
  EXPECT_EQ(out.count(), 0);
}

TEST(OutstandingTest, WaitNoneReturnsOnlyAfterTheLastTokenOnAnotherThread) {
  Outstanding out;
  std::atomic<bool> released{false};
  Outstanding::Token token = out.take();
  std::thread other([token = std::move(token), &released]() mutable {
    // the waiter below cannot have returned yet: this token is out
    released = true;
    Outstanding::Token gone = std::move(token);
  });
  out.waitNone();
  EXPECT_TRUE(released.load());
  EXPECT_EQ(out.count(), 0);
  other.join();
}

}  // namespace
}  // namespace tandem
