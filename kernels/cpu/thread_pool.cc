#include "kernels/cpu/thread_pool.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <vector>

#include "kernels/cpu/kernel_table.h"

#include "common/status.h"

namespace tandem::kernels::cpu {

namespace {

// spin a little before sleeping: ops of a forward pass follow each other
// within microseconds, and a futex wake costs more than that. Kept short
// because the machine is usually shared.
constexpr int kSpinIterations = 4000;

inline void cpuRelax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

}  // namespace

ThreadPool::ThreadPool(int num_threads) : num_threads_(num_threads) {
  TANDEM_CHECK(num_threads >= 1);
  for (int t = 1; t < num_threads; ++t) workers_.emplace_back([this, t] { workerLoop(t); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  generation_.fetch_add(1);
  generation_.notify_all();
  for (std::thread& w : workers_) w.join();
}

void ThreadPool::runTasks(int thread) {
  for (;;) {
    const int task = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (task >= num_tasks_) return;
    (*fn_)(task, thread);
  }
}

void ThreadPool::parallelFor(int num_tasks, const std::function<void(int, int)>& fn) {
  if (num_tasks <= 0) return;
  if (workers_.empty() || num_tasks == 1) {
    for (int t = 0; t < num_tasks; ++t) fn(t, 0);
    return;
  }
  fn_ = &fn;
  num_tasks_ = num_tasks;
  next_task_.store(0, std::memory_order_relaxed);
  busy_workers_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  runTasks(0);
  // wait for the workers to leave runTasks: they still read fn_.
  int spins = 0;
  for (;;) {
    const int busy = busy_workers_.load(std::memory_order_acquire);
    if (busy == 0) break;
    if (++spins < kSpinIterations) {
      cpuRelax();
    } else {
      busy_workers_.wait(busy, std::memory_order_acquire);
    }
  }
}

void ThreadPool::workerLoop(int thread) {
  // generation 0 is the constructor's: a parallelFor may already have
  // bumped it before this thread first runs.
  uint32_t seen = 0;
  for (;;) {
    int spins = 0;
    uint32_t now;
    while ((now = generation_.load(std::memory_order_acquire)) == seen) {
      if (++spins < kSpinIterations) {
        cpuRelax();
      } else {
        generation_.wait(seen, std::memory_order_acquire);
      }
    }
    seen = now;
    if (stop_.load()) return;
    runTasks(thread);
    if (busy_workers_.fetch_sub(1, std::memory_order_acq_rel) == 1) busy_workers_.notify_one();
  }
}

float* threadScratch(int slot, size_t floats) {
  TANDEM_CHECK(slot >= 0 && slot < 4);
  thread_local std::vector<float> areas[4];
  if (areas[slot].size() < floats) areas[slot].resize(floats);
  return areas[slot].data();
}

}  // namespace tandem::kernels::cpu
