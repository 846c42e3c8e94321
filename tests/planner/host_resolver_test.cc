// Name resolution bounded in time: the system's resolver on names and
// literals that need no DNS server, and lookups that hang (a DNS server
// that never answers, played by a lookup that blocks until the test lets
// it go) given up on after the timeout with a clear error, and refused at
// once while too many of them still hang.
#include "planner/host_resolver.h"

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace tandem::planner {
namespace {

using namespace std::chrono_literals;

// a lookup that blocks until release(); counts the lookups that returned.
class HangingLookup {
 public:
  HostLookup lookup() {
    return [state = state_](const std::string&, int) -> absl::StatusOr<Endpoints> {
      std::unique_lock lock(state->mu);
      ++state->started;
      state->cv.wait(lock, [&] { return state->released; });
      ++state->returned;
      return Endpoints{};
    };
  }
  void release() {
    std::lock_guard lock(state_->mu);
    state_->released = true;
    state_->cv.notify_all();
  }
  int returned() const {
    std::lock_guard lock(state_->mu);
    return state_->returned;
  }
  int started() const {
    std::lock_guard lock(state_->mu);
    return state_->started;
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool released = false;
    int started = 0;
    int returned = 0;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

// polls `done` until it holds or 30 s pass.
template <typename F>
bool waitUntil(F done) {
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

TEST(HostResolverTest, ResolvesIpLiteralsAndLocalhost) {
  absl::StatusOr<Endpoints> v4 = resolveHost("127.0.0.1", 8443, 30s);
  ASSERT_TRUE(v4.ok()) << v4.status();
  ASSERT_EQ(v4->size(), 1u);
  EXPECT_EQ(v4->front().address().to_string(), "127.0.0.1");
  EXPECT_EQ(v4->front().port(), 8443);
  absl::StatusOr<Endpoints> local = resolveHost("localhost", 80, 30s);
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_FALSE(local->empty());
}

TEST(HostResolverTest, ALookupThatHangsIsGivenUpAfterTheTimeout) {
  HangingLookup hanging;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<Endpoints> r = resolveHost("kubernetes.default.svc", 443, 50ms, hanging.lookup());
  EXPECT_TRUE(absl::IsDeadlineExceeded(r.status())) << r.status();
  EXPECT_EQ(r.status().message(),
            "cannot resolve kubernetes.default.svc within 50 ms (the DNS server does not answer?)");
  EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
  EXPECT_EQ(abandonedLookups(), 1);
  hanging.release();
  EXPECT_TRUE(waitUntil([&] { return hanging.returned() == 1 && abandonedLookups() == 0; }));
}

TEST(HostResolverTest, WhileTooManyLookupsHangNewOnesAreRefusedAtOnce) {
  HangingLookup hanging;
  for (int i = 0; i < kMaxAbandonedLookups; ++i) {
    EXPECT_TRUE(absl::IsDeadlineExceeded(resolveHost("api", 443, 10ms, hanging.lookup()).status()));
  }
  absl::StatusOr<Endpoints> refused = resolveHost("api", 443, 30s, hanging.lookup());
  EXPECT_TRUE(absl::IsResourceExhausted(refused.status())) << refused.status();
  EXPECT_EQ(hanging.returned(), 0);
  hanging.release();
  EXPECT_TRUE(waitUntil([&] { return abandonedLookups() == 0; }));
  EXPECT_EQ(hanging.returned(), kMaxAbandonedLookups);
  // the hung lookups are over: resolving works again.
  EXPECT_TRUE(resolveHost("127.0.0.1", 1, 30s).ok());
}

// the threads of this process now.
int processThreads() {
  int n = 0;
  for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// lookups run on a fixed pool, not a thread each: 3 * kMaxAbandonedLookups
// callers at once, their lookups slow but answering, add their own threads
// and at most kMaxAbandonedLookups more; each gets its answer in time.
TEST(HostResolverTest, ManyLookupsAtOnceShareAFewThreads) {
  constexpr int kCallers = 3 * kMaxAbandonedLookups;
  HangingLookup slow;
  const int before = processThreads();
  std::atomic<int> answered{0};
  std::vector<std::thread> callers;
  for (int i = 0; i < kCallers; ++i) {
    callers.emplace_back([&] {
      if (resolveHost("api", 443, 60s, slow.lookup()).ok()) ++answered;
    });
  }
  // the pool's threads are all taken and the other lookups wait for one
  // (the pool may have had threads before: earlier tests started them).
  ASSERT_TRUE(waitUntil([&] { return slow.started() >= kMaxAbandonedLookups; }));
  EXPECT_EQ(slow.started(), kMaxAbandonedLookups);
  EXPECT_LE(processThreads(), before + kCallers + kMaxAbandonedLookups);
  slow.release();
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(answered.load(), kCallers);
  EXPECT_EQ(slow.returned(), kCallers);
}

}  // namespace
}  // namespace tandem::planner
