#include "common/parallel_jobs.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace tandem {

void runJobs(size_t n, int threads, const std::function<void(size_t)>& fn) {
  const size_t wanted =
      threads > 0 ? static_cast<size_t>(threads) : std::max<size_t>(1, std::thread::hardware_concurrency());
  const size_t count = std::min(n, wanted);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) fn(i);
  };
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < count; ++t) helpers.emplace_back(work);
  work();
  for (std::thread& t : helpers) t.join();
}

}  // namespace tandem
