// CallExecutor: tasks run on its threads in order, a bounded queue refuses
// beyond its bound, stop() runs what is queued and refuses what comes after.
#include "common/call_executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace tandem {
namespace {

// a task that holds its thread until release().
class Latch {
 public:
  CallExecutor::Task task() {
    return [this] {
      std::unique_lock lock(mu_);
      entered_ = true;
      changed_.notify_all();
      changed_.wait(lock, [&] { return released_; });
    };
  }
  bool waitEntered() {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, std::chrono::seconds(30), [&] { return entered_; });
  }
  void release() {
    {
      std::lock_guard lock(mu_);
      released_ = true;
    }
    changed_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  bool entered_ = false;
  bool released_ = false;
};

TEST(CallExecutorTest, RunsTasksInOrderOnItsOwnThread) {
  CallExecutor executor(1);
  std::vector<int> order;
  std::thread::id ran_on;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(executor.post([&order, &ran_on, i] {
      order.push_back(i);
      ran_on = std::this_thread::get_id();
    }));
  }
  executor.stop();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
  EXPECT_NE(ran_on, std::this_thread::get_id());
}

TEST(CallExecutorTest, ABoundedQueueRefusesBeyondItsBoundAndTakesMoreOnceItDrains) {
  CallExecutor executor(1, /*max_queued=*/1);
  Latch latch;
  ASSERT_TRUE(executor.post(latch.task()));
  ASSERT_TRUE(latch.waitEntered());  // running: not counted as queued
  std::atomic<int> ran{0};
  ASSERT_TRUE(executor.post([&] { ++ran; }));
  // a move-only task is dropped when refused.
  auto owned = std::make_unique<int>(7);
  EXPECT_FALSE(executor.post([owned = std::move(owned), &ran] { ran += *owned; }));
  EXPECT_FALSE(executor.stopping());
  latch.release();
  executor.stop();
  EXPECT_EQ(ran.load(), 1);
  EXPECT_TRUE(executor.stopping());
  EXPECT_FALSE(executor.post([] {}));
}

}  // namespace
}  // namespace tandem
