// A fixed set of threads for the steps of calls that must run neither on an
// I/O thread (gRPC's, the HTTP server's) nor on the engine's: a worker's
// Prefill block sends (they wait on the network), the router's request
// preparation (JSON parsing, chat rendering, tokenization: CPU-bound and
// proportional to the body). Calls post short steps when there is work for
// them, so no call owns a thread and the threads are bounded; so is the
// queue when the owner says so. stop() runs what is queued and joins.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/functional/any_invocable.h"

namespace tandem {

class CallExecutor {
 public:
  // move-only: a task may own what it works on (a call's admission slot).
  using Task = absl::AnyInvocable<void()>;

  // starts `num_threads` (>= 1) threads; at most `max_queued` tasks wait
  // for one (the ones running not counted). `nice` > 0 lowers the threads'
  // CPU priority by that much (Linux niceness is per thread): bulk work
  // that must yield the CPU to everything else the process does.
  explicit CallExecutor(int num_threads,
                        size_t max_queued = std::numeric_limits<size_t>::max(), int nice = 0);
  // stop().
  ~CallExecutor();
  CallExecutor(const CallExecutor&) = delete;
  CallExecutor& operator=(const CallExecutor&) = delete;

  // runs `task` on one of the threads, after the tasks posted before it.
  // false, and `task` dropped, when max_queued tasks wait already or once
  // stop() began (stopping() tells which).
  bool post(Task task);
  // runs every task already queued (and those they post), then joins the
  // threads. Idempotent; not from one of the executor's threads.
  void stop();
  // true once stop() began.
  bool stopping() const;
  int numThreads() const { return static_cast<int>(threads_.size()); }

 private:
  void run();

  const size_t max_queued_;
  mutable std::mutex mu_;
  std::condition_variable ready_;
  std::deque<Task> tasks_;  // guarded by mu_
  int running_ = 0;         // tasks being run; guarded by mu_
  bool stopping_ = false;   // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace tandem
