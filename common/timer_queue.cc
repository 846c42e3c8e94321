#include "common/timer_queue.h"

#include <pthread.h>

#include <utility>

#include "common/status.h"

namespace tandem {

TimerQueue::TimerQueue(std::string name) {
  thread_ = std::thread([this, name = std::move(name)]() mutable { run(std::move(name)); });
}

TimerQueue::~TimerQueue() {
  // a callback cannot join the thread it runs on.
  TANDEM_CHECK(!onQueueThread());
  stop();
}

TimerQueue::TimerId TimerQueue::runAt(Clock::time_point when, Callback callback) {
  return add(when, Clock::duration::zero(), false, std::move(callback));
}

TimerQueue::TimerId TimerQueue::runAfter(Clock::duration delay, Callback callback) {
  return add(Clock::now() + delay, Clock::duration::zero(), false, std::move(callback));
}

TimerQueue::TimerId TimerQueue::runEvery(Clock::time_point first, Clock::duration period,
                                         Callback callback) {
  return add(first, period, true, std::move(callback));
}

TimerQueue::TimerId TimerQueue::runEvery(Clock::duration period, Callback callback) {
  return add(Clock::now() + period, period, true, std::move(callback));
}

TimerQueue::TimerId TimerQueue::add(Clock::time_point when, Clock::duration period, bool periodic,
                                    Callback callback) {
  // a dropped callback is destroyed after the lock is released (parameters
  // outlive the body's locals).
  std::unique_lock lock(mu_);
  if (stopping_) return kNoTimer;
  const TimerId id = next_id_++;
  timers_.emplace(Key{when, id}, Timer{std::move(callback), period, periodic});
  due_.emplace(id, when);
  const bool earliest = timers_.begin()->first.id == id;
  lock.unlock();
  // the thread sleeps until the earliest deadline; only a new earliest one
  // changes when it should wake.
  if (earliest) cv_.notify_one();
  return id;
}

bool TimerQueue::cancel(TimerId id) {
  std::map<Key, Timer>::node_type node;  // destroyed after the lock is released
  std::lock_guard lock(mu_);
  if (id == kNoTimer) return false;
  if (id == running_) {
    if (!running_periodic_ || running_cancelled_) return false;
    running_cancelled_ = true;
    return true;
  }
  auto it = due_.find(id);
  if (it == due_.end()) return false;
  node = timers_.extract(Key{it->second, id});
  due_.erase(it);
  return true;
}

void TimerQueue::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (onQueueThread()) return;  // the thread exits when this callback returns
  std::lock_guard join_lock(join_mu_);
  if (thread_.joinable()) thread_.join();
}

bool TimerQueue::onQueueThread() const { return std::this_thread::get_id() == thread_id_.load(); }

size_t TimerQueue::size() const {
  std::lock_guard lock(mu_);
  return timers_.size();
}

void TimerQueue::run(std::string name) {
  thread_id_.store(std::this_thread::get_id());
  if (!name.empty()) pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (timers_.empty()) {
      cv_.wait(lock);
      continue;
    }
    auto it = timers_.begin();
    if (it->first.when > Clock::now()) {
      // a copy: wait_until reads the deadline again after waking, when a
      // cancel() may have freed the timer's node.
      const Clock::time_point when = it->first.when;
      cv_.wait_until(lock, when);
      continue;
    }
    const Key key = it->first;
    Timer timer = std::move(it->second);
    timers_.erase(it);
    due_.erase(key.id);
    running_ = key.id;
    running_periodic_ = timer.periodic;
    running_cancelled_ = false;
    lock.unlock();
    timer.callback();
    if (!timer.periodic) timer.callback = nullptr;  // its captures go outside the lock
    lock.lock();
    running_ = kNoTimer;
    if (!timer.periodic) continue;
    if (running_cancelled_ || stopping_) {
      lock.unlock();
      timer.callback = nullptr;
      lock.lock();
      continue;
    }
    // due on the grid from `first`; after an overrun, at once.
    Clock::time_point next = key.when + timer.period;
    if (const Clock::time_point now = Clock::now(); next < now) next = now;
    timers_.emplace(Key{next, key.id}, std::move(timer));
    due_.emplace(key.id, next);
  }
  std::map<Key, Timer> dropped;
  dropped.swap(timers_);
  due_.clear();
  lock.unlock();
  // `dropped` and its callbacks' captures are destroyed here, unlocked.
}

}  // namespace tandem
