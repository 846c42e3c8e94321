#include "kernels/cpu/thread_pool.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace tandem::kernels::cpu {
namespace {

TEST(ThreadPoolTest, RunsEveryTaskExactlyOnce) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int round = 0; round < 200; ++round) {
      const int n = 1 + round % 37;
      std::vector<std::atomic<int>> hits(n);
      pool.parallelFor(n, [&](int task, int thread) {
        ASSERT_GE(thread, 0);
        ASSERT_LT(thread, threads);
        hits[task].fetch_add(1);
      });
      for (int i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "task " << i;
    }
  }
}

TEST(ThreadPoolTest, OneThreadRunsInlineOnTheCaller) {
  ThreadPool pool(1);
  const std::thread::id caller = std::this_thread::get_id();
  int ran = 0;
  pool.parallelFor(5, [&](int, int thread) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    EXPECT_EQ(thread, 0);
    ++ran;
  });
  EXPECT_EQ(ran, 5);
}

TEST(ThreadPoolTest, ZeroTasksReturnsAtOnce) {
  ThreadPool pool(2);
  pool.parallelFor(0, [](int, int) { FAIL(); });
}

}  // namespace
}  // namespace tandem::kernels::cpu
