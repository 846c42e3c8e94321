#include "common/call_executor.h"

#include <algorithm>
#include <cerrno>

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/crash_report.h"

namespace tandem {

CallExecutor::CallExecutor(int num_threads, size_t max_queued, int nice) : max_queued_(max_queued) {
  for (int i = 0; i < std::max(num_threads, 1); ++i) {
    threads_.emplace_back([this, nice] {
      // requests are parsed here: a crash report even for a stack overflow.
      crash::useAltStackOnThisThread();
      if (nice > 0) {
        // best effort: a thread that cannot be reniced runs as it is.
        const auto tid = static_cast<id_t>(syscall(SYS_gettid));
        errno = 0;
        const int current = getpriority(PRIO_PROCESS, tid);
        if (errno == 0) setpriority(PRIO_PROCESS, tid, std::min(current + nice, 19));
      }
      run();
    });
  }
}

CallExecutor::~CallExecutor() { stop(); }

bool CallExecutor::post(Task task) {
  {
    std::lock_guard lock(mu_);
    // a task that runs during stop() may still post its follow-up steps.
    if (stopping_ && running_ == 0) return false;
    if (tasks_.size() >= max_queued_) return false;
    tasks_.push_back(std::move(task));
  }
  ready_.notify_one();
  return true;
}

void CallExecutor::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

bool CallExecutor::stopping() const {
  std::lock_guard lock(mu_);
  return stopping_;
}

void CallExecutor::run() {
  std::unique_lock lock(mu_);
  while (true) {
    ready_.wait(lock, [&] { return !tasks_.empty() || (stopping_ && running_ == 0); });
    if (tasks_.empty()) {
      // stopping and drained: wake the other threads so they leave too.
      ready_.notify_all();
      return;
    }
    Task task = std::move(tasks_.front());
    tasks_.pop_front();
    ++running_;
    lock.unlock();
    task();
    task = nullptr;
    lock.lock();
    --running_;
    if (stopping_) ready_.notify_all();
  }
}

}  // namespace tandem
