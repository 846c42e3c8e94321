#include "common/parallel_jobs.h"

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace tandem {
namespace {

TEST(RunJobsTest, RunsEveryJobOnceWhateverTheThreadCount) {
  for (int threads : {0, 1, 3, 16}) {
    std::vector<std::atomic<int>> runs(10);
    runJobs(runs.size(), threads, [&](size_t i) { ++runs[i]; });
    for (size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(runs[i].load(), 1) << "job " << i << ", " << threads << " threads";
  }
}

TEST(RunJobsTest, UsesAtMostTheThreadsAskedForTheCallersAmongThem) {
  std::mutex mu;
  std::set<std::thread::id> seen;
  runJobs(64, 2, [&](size_t) {
    std::lock_guard lock(mu);
    seen.insert(std::this_thread::get_id());
  });
  EXPECT_LE(seen.size(), 2u);
  std::set<std::thread::id> alone;
  runJobs(5, 1, [&](size_t) { alone.insert(std::this_thread::get_id()); });
  EXPECT_EQ(alone, std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST(RunJobsTest, NoJobsIsNoCall) {
  int calls = 0;
  runJobs(0, 4, [&](size_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace tandem
