// Background work in one place: a TimerQueue runs callbacks at deadlines
// (runAt, runAfter) and at fixed periods (runEvery) on one thread it owns.
//
// Threading contract
//  - Every method is thread-safe and may be called from any thread,
//    including from inside a callback of the same queue (a callback may
//    schedule or cancel timers, its own included, and may call stop()).
//  - Callbacks run one at a time, on the queue's thread, with no lock of
//    the queue held. Timers due at the same moment run in the order they
//    were scheduled; an earlier deadline always runs first.
//  - A callback that blocks delays every other timer of its queue. An owner
//    whose callback makes a blocking call (a gRPC call with a deadline, a
//    DNS lookup) therefore owns its own TimerQueue, so it starves nobody
//    else: one mechanism, one thread per owner. Callbacks must not throw.
//  - cancel() never waits for a callback: it only keeps a timer from
//    starting again. To be sure no callback touches an object any more,
//    stop() the queue (it joins its thread) before destroying the object.
//  - stop() returns after the thread has exited: no callback runs after it
//    returns, and pending timers are dropped (their callbacks destroyed,
//    never run). Called from inside a callback it cannot wait for that
//    callback; no other callback starts after it returns.
//
// Periods do not drift: a periodic timer's runs are due at first, first +
// period, first + 2 * period, ... however long each run takes or however
// late the thread woke. A run that ends after its next run was due is
// followed by the next run at once (no burst of catch-up runs); later runs
// are spaced a period from that one.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

namespace tandem {

class TimerQueue {
 public:
  using Clock = std::chrono::steady_clock;
  using Callback = std::function<void()>;
  // names one scheduled timer (one-shot or periodic); never reused by a queue.
  using TimerId = uint64_t;
  static constexpr TimerId kNoTimer = 0;

  // starts the thread. `name` (at most 15 characters are kept) names it in
  // debuggers and `top -H`; "" leaves the default.
  explicit TimerQueue(std::string name = "");
  // stop()s. Must not be called from the queue's own thread (a callback).
  ~TimerQueue();
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  // runs `callback` once at `when` (at once if it passed). Returns its id,
  // or kNoTimer (and drops the callback) once the queue is stopping.
  TimerId runAt(Clock::time_point when, Callback callback);
  // runAt(now + delay).
  TimerId runAfter(Clock::duration delay, Callback callback);
  // runs `callback` at first, first + period, ... until cancelled or the
  // queue stops (see the drift rule above; a period <= 0 runs back to
  // back). kNoTimer once the queue is stopping.
  TimerId runEvery(Clock::time_point first, Clock::duration period, Callback callback);
  // runEvery(now + period, period, callback).
  TimerId runEvery(Clock::duration period, Callback callback);

  // keeps timer `id` from running (again). True when this call did so: the
  // timer was pending, or is a periodic timer (possibly running right now,
  // which cancel() does not wait for). False for a one-shot timer that
  // already ran or is running, an id already cancelled, or kNoTimer.
  bool cancel(TimerId id);

  // stops the thread and drops pending timers; see the contract above.
  // Idempotent; later runAt/runEvery calls return kNoTimer.
  void stop();

  // true on the queue's thread (inside a callback).
  bool onQueueThread() const;
  // timers waiting for their deadline (not the one running now), for tests.
  size_t size() const;

 private:
  struct Key {
    Clock::time_point when;
    TimerId id;  // scheduling order breaks ties
    bool operator<(const Key& o) const { return when != o.when ? when < o.when : id < o.id; }
  };
  struct Timer {
    Callback callback;
    Clock::duration period{0};
    bool periodic = false;
  };

  TimerId add(Clock::time_point when, Clock::duration period, bool periodic, Callback callback);
  void run(std::string name);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<Key, Timer> timers_;                          // due order; guarded by mu_
  std::unordered_map<TimerId, Clock::time_point> due_;   // id → its key's when; guarded by mu_
  TimerId next_id_ = 1;                                  // guarded by mu_
  TimerId running_ = kNoTimer;                           // the callback running now; guarded by mu_
  bool running_periodic_ = false;                        // guarded by mu_
  bool running_cancelled_ = false;                       // guarded by mu_
  bool stopping_ = false;                                // guarded by mu_
  std::atomic<std::thread::id> thread_id_{};
  std::mutex join_mu_;  // one stop() joins; the others wait for it
  std::thread thread_;
};

}  // namespace tandem
