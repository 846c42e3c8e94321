#include "common/timer_queue.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace tandem {
namespace {

using Clock = TimerQueue::Clock;
using std::chrono::milliseconds;

constexpr auto kGenerous = std::chrono::seconds(20);

// what the callbacks did, in order, and a way to wait for it.
class Log {
 public:
  void add(std::string what) {
    std::lock_guard lock(mu_);
    entries_.push_back(std::move(what));
    cv_.notify_all();
  }
  // true once at least n entries arrived (false after a generous wait).
  bool waitFor(size_t n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kGenerous, [&] { return entries_.size() >= n; });
  }
  std::vector<std::string> entries() const {
    std::lock_guard lock(mu_);
    return entries_;
  }
  size_t size() const {
    std::lock_guard lock(mu_);
    return entries_.size();
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> entries_;
};

// a one-way flag that threads can wait for.
class OpenLatch {
 public:
  void open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  bool wait() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kGenerous, [&] { return open_; });
  }
  bool isOpen() const {
    std::lock_guard lock(mu_);
    return open_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// schedules a marker `delay` from now and waits until it ran: every timer
// due before it has run by then.
void runMarkerAfter(TimerQueue& queue, milliseconds delay) {
  OpenLatch ran;
  ASSERT_NE(queue.runAfter(delay, [&] { ran.open(); }), TimerQueue::kNoTimer);
  ASSERT_TRUE(ran.wait());
}

TEST(TimerQueueTest, RunsOneShotTimersInDeadlineOrder) {
  TimerQueue queue("test");
  Log log;
  const Clock::time_point t0 = Clock::now() + milliseconds(30);
  queue.runAt(t0 + milliseconds(20), [&] { log.add("c"); });
  queue.runAt(t0, [&] { log.add("a"); });
  queue.runAt(t0 + milliseconds(10), [&] { log.add("b"); });
  ASSERT_TRUE(log.waitFor(3));
  EXPECT_EQ(log.entries(), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(TimerQueueTest, RunsTimersDueTogetherInTheOrderTheyWereScheduled) {
  TimerQueue queue;
  Log log;
  OpenLatch gate;
  // hold the thread so that every timer below is due when it looks again.
  queue.runAt(Clock::now(), [&] { gate.wait(); });
  const Clock::time_point when = Clock::now();
  for (int i = 0; i < 5; ++i) queue.runAt(when, [&log, i] { log.add(std::to_string(i)); });
  queue.runAt(when - milliseconds(1), [&] { log.add("earlier"); });
  gate.open();
  ASSERT_TRUE(log.waitFor(6));
  EXPECT_EQ(log.entries(), (std::vector<std::string>{"earlier", "0", "1", "2", "3", "4"}));
}

TEST(TimerQueueTest, RunsAPeriodicTimerUntilItIsCancelled) {
  TimerQueue queue;
  Log log;
  const TimerQueue::TimerId id = queue.runEvery(milliseconds(5), [&] { log.add("tick"); });
  ASSERT_TRUE(log.waitFor(5));
  // cancelled on the queue's thread, so no run is in progress meanwhile.
  size_t ticks_at_cancel = 0;
  bool cancelled = false;
  OpenLatch done;
  queue.runAt(Clock::now(), [&] {
    cancelled = queue.cancel(id);
    ticks_at_cancel = log.size();
    done.open();
  });
  ASSERT_TRUE(done.wait());
  EXPECT_TRUE(cancelled);
  runMarkerAfter(queue, milliseconds(50));  // ten periods
  EXPECT_EQ(log.size(), ticks_at_cancel);
  EXPECT_FALSE(queue.cancel(id));
}

TEST(TimerQueueTest, RunsAPeriodicTimerFirstAtItsFirstDeadline) {
  TimerQueue queue;
  Log log;
  const Clock::time_point first = Clock::now();
  queue.runEvery(first, std::chrono::hours(1), [&] { log.add("tick"); });
  ASSERT_TRUE(log.waitFor(1));
  runMarkerAfter(queue, milliseconds(0));  // the tick was put back before it ran
  EXPECT_EQ(log.size(), 1u);
  EXPECT_EQ(queue.size(), 1u);  // the next run, an hour later
}

TEST(TimerQueueTest, PeriodicRunsStayOnTheirGridWhenEachRunTakesMostOfAPeriod) {
  TimerQueue queue;
  constexpr milliseconds kPeriod{100};
  constexpr int kRuns = 10;
  std::mutex mu;
  std::vector<Clock::time_point> starts;
  OpenLatch done;
  const Clock::time_point first = Clock::now() + kPeriod;
  std::unique_lock lock(mu);  // `id` is written after runEvery returns
  const TimerQueue::TimerId id = queue.runEvery(first, kPeriod, [&] {
    std::unique_lock guard(mu);
    starts.push_back(Clock::now());
    if (starts.size() == kRuns) {
      queue.cancel(id);
      done.open();
      return;
    }
    guard.unlock();
    // the work of a run: most of a period. a timer that measured its
    // period from the end of a run would fall behind by this each time.
    std::this_thread::sleep_for(kPeriod * 8 / 10);
  });
  lock.unlock();
  ASSERT_TRUE(done.wait());
  lock.lock();
  ASSERT_EQ(starts.size(), static_cast<size_t>(kRuns));
  for (int k = 0; k < kRuns; ++k) EXPECT_GE(starts[k], first + k * kPeriod) << "run " << k;
  // on the grid the last run starts at first + 900 ms; drifting by 80 ms a
  // run it would start at first + 1620 ms. the bound sits far from both.
  EXPECT_LT(starts.back(), first + (kRuns - 1) * kPeriod + milliseconds(500));
}

TEST(TimerQueueTest, AfterARunOverranTheNextRunsAreAPeriodApartNotABurst) {
  TimerQueue queue;
  constexpr milliseconds kPeriod{20};
  std::mutex mu;
  std::vector<Clock::time_point> starts;
  Clock::time_point end_of_overrun;
  OpenLatch done;
  std::unique_lock lock(mu);
  TimerQueue::TimerId id = queue.runEvery(Clock::now(), kPeriod, [&] {
    std::lock_guard guard(mu);
    starts.push_back(Clock::now());
    if (starts.size() == 1) {
      // the work of this run misses ten periods.
      std::this_thread::sleep_for(kPeriod * 10);
      end_of_overrun = Clock::now();
    } else if (starts.size() == 3) {
      queue.cancel(id);
      done.open();
    }
  });
  lock.unlock();
  ASSERT_TRUE(done.wait());
  lock.lock();
  ASSERT_EQ(starts.size(), 3u);
  // the missed periods are not made up in a burst: the run after the
  // overrun starts at once, the one after it a period later.
  EXPECT_GE(starts[1], end_of_overrun);
  EXPECT_GE(starts[2], end_of_overrun + kPeriod);
}

TEST(TimerQueueTest, CancelledOneShotNeverRuns) {
  TimerQueue queue;
  Log log;
  const TimerQueue::TimerId id =
      queue.runAfter(milliseconds(20), [&] { log.add("cancelled one"); });
  EXPECT_TRUE(queue.cancel(id));
  EXPECT_FALSE(queue.cancel(id));
  EXPECT_FALSE(queue.cancel(TimerQueue::kNoTimer));
  runMarkerAfter(queue, milliseconds(60));
  EXPECT_EQ(log.size(), 0u);
}

// the queue thread waits for the earliest timer's deadline; cancelling
// that timer frees it while the thread waits, and the thread must not read
// the freed deadline when it wakes (ASan saw that in the transfer table).
TEST(TimerQueueTest, CancellingTheTimerTheQueueWaitsForIsSafe) {
  TimerQueue queue;
  for (int i = 0; i < 2000; ++i) {
    const TimerQueue::TimerId far = queue.runAfter(std::chrono::hours(1), [] {});
    ASSERT_NE(far, TimerQueue::kNoTimer);
    for (int spin = 0; spin < i % 8; ++spin) std::this_thread::yield();
    EXPECT_TRUE(queue.cancel(far));
  }
  runMarkerAfter(queue, milliseconds(1));
  EXPECT_EQ(queue.size(), 0u);
}

TEST(TimerQueueTest, CancelOfAOneShotThatRanReturnsFalse) {
  TimerQueue queue;
  Log log;
  const TimerQueue::TimerId id = queue.runAfter(milliseconds(0), [&] { log.add("ran"); });
  ASSERT_TRUE(log.waitFor(1));
  EXPECT_FALSE(queue.cancel(id));
}

TEST(TimerQueueTest, APeriodicTimerCanCancelItselfFromItsCallback) {
  TimerQueue queue;
  Log log;
  std::mutex mu;  // `id` is written after runEvery returns
  bool cancelled = false;
  std::unique_lock lock(mu);
  const TimerQueue::TimerId id = queue.runEvery(milliseconds(2), [&] {
    log.add("tick");
    if (log.size() == 3) {
      std::lock_guard guard(mu);
      cancelled = queue.cancel(id);
    }
  });
  lock.unlock();
  ASSERT_TRUE(log.waitFor(3));
  runMarkerAfter(queue, milliseconds(40));
  EXPECT_EQ(log.size(), 3u);
  lock.lock();
  EXPECT_TRUE(cancelled);
}

TEST(TimerQueueTest, ACallbackCanScheduleAndCancelOtherTimers) {
  TimerQueue queue;
  Log log;
  const TimerQueue::TimerId later =
      queue.runAfter(std::chrono::hours(1), [&] { log.add("later"); });
  bool cancelled = false;
  queue.runAfter(milliseconds(0), [&] {
    log.add("first");
    cancelled = queue.cancel(later);
    queue.runAfter(milliseconds(1), [&] {
      log.add("second");
      queue.runAt(Clock::now(), [&] { log.add("third"); });
    });
  });
  ASSERT_TRUE(log.waitFor(3));
  EXPECT_EQ(log.entries(), (std::vector<std::string>{"first", "second", "third"}));
  EXPECT_TRUE(cancelled);
  EXPECT_EQ(queue.size(), 0u);
}

TEST(TimerQueueTest, StopWaitsForTheRunningCallbackAndNothingRunsAfter) {
  auto queue = std::make_unique<TimerQueue>();
  OpenLatch entered;
  OpenLatch release;
  bool finished = false;  // written by the callback, read after stop() joined it
  queue->runAt(Clock::now(), [&] {
    entered.open();
    release.wait();
    finished = true;
  });
  Log log;
  queue->runEvery(Clock::now(), milliseconds(1), [&] { log.add("periodic"); });
  auto pending = std::make_shared<int>(0);
  queue->runAfter(milliseconds(1), [pending, &log] { log.add("pending"); });
  ASSERT_TRUE(entered.wait());
  bool finished_when_stop_returned = false;
  std::thread stopper([&] {
    queue->stop();
    finished_when_stop_returned = finished;
  });
  // once stop() began, scheduling is refused; only then may the running
  // callback return.
  while (queue->runAfter(std::chrono::hours(1), [] {}) != TimerQueue::kNoTimer) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  release.open();
  stopper.join();
  EXPECT_TRUE(finished_when_stop_returned);
  // the due timers behind the running one were dropped, not run.
  EXPECT_EQ(log.size(), 0u);
  EXPECT_EQ(pending.use_count(), 1);  // the dropped callback was destroyed
  // scheduling after stop drops the callback at once.
  auto late = std::make_shared<int>(0);
  EXPECT_EQ(queue->runAt(Clock::now(), [late, &log] { log.add("late"); }), TimerQueue::kNoTimer);
  EXPECT_EQ(queue->runEvery(milliseconds(1), [late] {}), TimerQueue::kNoTimer);
  EXPECT_EQ(late.use_count(), 1);
  queue->stop();  // idempotent
  queue.reset();
  EXPECT_EQ(log.size(), 0u);
}

TEST(TimerQueueTest, StopFromInsideACallbackEndsTheQueueWithoutDeadlock) {
  TimerQueue queue;
  Log log;
  OpenLatch gate;
  queue.runAt(Clock::now(), [&] { gate.wait(); });
  const Clock::time_point when = Clock::now();
  queue.runAt(when, [&] {
    EXPECT_TRUE(queue.onQueueThread());
    queue.stop();
    log.add("stopped");
  });
  queue.runAt(when, [&] { log.add("after stop"); });
  gate.open();
  ASSERT_TRUE(log.waitFor(1));
  queue.stop();  // joins the thread
  EXPECT_EQ(log.entries(), (std::vector<std::string>{"stopped"}));
  EXPECT_FALSE(queue.onQueueThread());
}

TEST(TimerQueueTest, ConcurrentStopsAllReturnAfterTheThreadExited) {
  TimerQueue queue;
  OpenLatch entered;
  OpenLatch release;
  std::atomic<bool> finished{false};
  queue.runAt(Clock::now(), [&] {
    entered.open();
    release.wait();
    finished = true;
  });
  ASSERT_TRUE(entered.wait());
  std::vector<std::thread> stoppers;
  std::atomic<int> saw_unfinished{0};
  for (int i = 0; i < 4; ++i) {
    stoppers.emplace_back([&] {
      queue.stop();
      if (!finished) ++saw_unfinished;
    });
  }
  release.open();
  for (std::thread& t : stoppers) t.join();
  EXPECT_EQ(saw_unfinished.load(), 0);
}

TEST(TimerQueueTest, RunsManyTimersFromManyThreadsEachOnceInDeadlineOrder) {
  TimerQueue queue;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2500;
  std::mutex mu;
  std::vector<Clock::time_point> ran;  // the deadline of each run, in run order
  std::condition_variable cv;
  const Clock::time_point base = Clock::now() + milliseconds(20);
  // held until every timer is in, so the run order is the deadline order.
  OpenLatch gate;
  queue.runAt(Clock::now(), [&] { gate.wait(); });
  std::vector<std::thread> threads;
  std::atomic<int> cancelled{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::uniform_int_distribution<int> offset_us(0, 50000);
      for (int i = 0; i < kPerThread; ++i) {
        const Clock::time_point when = base + std::chrono::microseconds(offset_us(rng));
        const TimerQueue::TimerId id = queue.runAt(when, [&, when] {
          std::lock_guard lock(mu);
          ran.push_back(when);
          cv.notify_all();
        });
        ASSERT_NE(id, TimerQueue::kNoTimer);
        // every tenth one is cancelled before it could run.
        if (i % 10 == 0) {
          EXPECT_TRUE(queue.cancel(id));
          ++cancelled;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  gate.open();
  const size_t expected = kThreads * kPerThread - cancelled.load();
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, kGenerous, [&] { return ran.size() >= expected; }));
  lock.unlock();
  runMarkerAfter(queue, milliseconds(10));
  lock.lock();
  EXPECT_EQ(ran.size(), expected);
  EXPECT_TRUE(std::is_sorted(ran.begin(), ran.end()));
  EXPECT_EQ(queue.size(), 0u);
}

}  // namespace
}  // namespace tandem
