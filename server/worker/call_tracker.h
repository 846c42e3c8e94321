// Counts work that runs outside gRPC's own bookkeeping (Prefill calls on
// the CallExecutor, remote prefills on other workers) so the worker can
// wait for it before tearing down what that work uses.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace tandem::worker {

class CallTracker {
 public:
  void enter() {
    std::lock_guard lock(mu_);
    ++active_;
  }
  void leave() {
    std::lock_guard lock(mu_);
    if (--active_ == 0) idle_.notify_all();
  }
  int active() const {
    std::lock_guard lock(mu_);
    return active_;
  }
  // true once nothing is active, false when `timeout` passed first.
  bool waitIdle(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return idle_.wait_for(lock, timeout, [&] { return active_ == 0; });
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable idle_;
  int active_ = 0;
};

}  // namespace tandem::worker
