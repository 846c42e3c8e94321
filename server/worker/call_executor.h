// A fixed set of threads for the steps of calls that must run neither on
// gRPC's threads nor on the engine's: a Prefill call's block sends (they
// wait on the network). Calls post short steps when there is work for them
// (the engine computed more blocks, the client cancelled), so no call owns
// a thread and the threads are bounded. stop() runs what is queued and
// joins.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tandem::worker {

class CallExecutor {
 public:
  // starts `num_threads` (>= 1) threads.
  explicit CallExecutor(int num_threads);
  // stop().
  ~CallExecutor();
  CallExecutor(const CallExecutor&) = delete;
  CallExecutor& operator=(const CallExecutor&) = delete;

  // runs `task` on one of the threads, after the tasks posted before it.
  // false, and `task` dropped, once stop() began.
  bool post(std::function<void()> task);
  // runs every task already queued (and those they post), then joins the
  // threads. Idempotent; not from one of the executor's threads.
  void stop();

 private:
  void run();

  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;  // guarded by mu_
  int running_ = 0;                          // tasks being run; guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace tandem::worker
