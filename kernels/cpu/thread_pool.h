// A persistent pool of worker threads for the cpu backend's ops. The calling
// thread works too, so a pool of one thread runs everything inline, and ops
// pay no thread start-up: a forward pass issues hundreds of small ops.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace tandem::kernels::cpu {

class ThreadPool {
 public:
  // num_threads >= 1 counts the caller; num_threads - 1 workers are started.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return num_threads_; }

  // runs fn(task, thread) for every task in [0, num_tasks) and returns when
  // all have finished. Tasks are handed out one at a time, so a thread that
  // the OS preempts does not hold up the rest; thread is in [0, size()).
  // Not reentrant: fn must not call parallelFor.
  void parallelFor(int num_tasks, const std::function<void(int task, int thread)>& fn);

 private:
  void workerLoop(int thread);
  void runTasks(int thread);

  const int num_threads_;
  std::vector<std::thread> workers_;
  // bumped once per parallelFor; workers wake on a change.
  std::atomic<uint32_t> generation_{0};
  std::atomic<int> next_task_{0};
  std::atomic<int> busy_workers_{0};
  std::atomic<bool> stop_{false};
  int num_tasks_ = 0;
  const std::function<void(int, int)>* fn_ = nullptr;
};

}  // namespace tandem::kernels::cpu
