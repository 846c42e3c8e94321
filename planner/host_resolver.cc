#include "planner/host_resolver.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "boost/asio/io_context.hpp"

namespace tandem::planner {
namespace {

// lookups given up on and still to run or running, over all calls.
std::atomic<int> g_abandoned{0};

// one lookup, shared by the waiting caller and the pool thread that runs it.
struct Pending {
  HostLookup lookup;
  std::string host;
  int port = 0;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;        // guarded by mu
  bool abandoned = false;   // guarded by mu: the caller stopped waiting
  absl::StatusOr<Endpoints> result = absl::UnknownError("not resolved");  // guarded by mu

  void run() {
    absl::StatusOr<Endpoints> answer = lookup(host, port);
    std::lock_guard lock(mu);
    result = std::move(answer);
    done = true;
    if (abandoned) g_abandoned.fetch_sub(1, std::memory_order_acq_rel);
    cv.notify_all();
  }
};

// the threads lookups run on: started as lookups wait for one, at most
// kLookupThreads, then kept. A lookup given up on still runs (a thread
// may be taking it as its caller leaves); its answer is dropped. Never
// destroyed: at exit a thread may be stuck in getaddrinfo, which no join
// could wait out; exiting ends it.
class LookupPool {
 public:
  static constexpr size_t kLookupThreads = kMaxAbandonedLookups;

  static LookupPool& get() {
    static LookupPool* const pool = new LookupPool();
    return *pool;
  }

  void submit(std::shared_ptr<Pending> pending) {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(pending));
    if (queue_.size() > idle_ && threads_.size() < kLookupThreads) {
      threads_.emplace_back([this] { run(); });
    } else {
      cv_.notify_one();
    }
  }

 private:
  void run() {
    std::unique_lock lock(mu_);
    while (true) {
      ++idle_;
      cv_.wait(lock, [this] { return !queue_.empty(); });
      --idle_;
      std::shared_ptr<Pending> pending = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      pending->run();
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Pending>> queue_;  // guarded by mu_
  std::vector<std::thread> threads_;            // guarded by mu_
  size_t idle_ = 0;  // threads waiting for a lookup; guarded by mu_
};

}  // namespace

int abandonedLookups() { return g_abandoned.load(std::memory_order_acquire); }

absl::StatusOr<Endpoints> systemLookup(const std::string& host, int port) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::resolver resolver(io);
  boost::system::error_code ec;
  const auto results = resolver.resolve(host, std::to_string(port), ec);
  if (ec) return absl::UnavailableError(absl::StrCat("cannot resolve ", host, ": ", ec.message()));
  Endpoints endpoints;
  for (const auto& entry : results) endpoints.push_back(entry.endpoint());
  if (endpoints.empty()) return absl::UnavailableError(absl::StrCat("cannot resolve ", host, ": no address"));
  return endpoints;
}

absl::StatusOr<Endpoints> resolveHost(const std::string& host, int port,
                                      std::chrono::milliseconds timeout, const HostLookup& lookup) {
  if (g_abandoned.load(std::memory_order_acquire) >= kMaxAbandonedLookups) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot resolve ", host, ": ", kMaxAbandonedLookups,
        " earlier name lookups timed out and are still running (is the DNS server answering?)"));
  }
  auto pending = std::make_shared<Pending>();
  pending->lookup = lookup;
  pending->host = host;
  pending->port = port;
  LookupPool::get().submit(pending);
  std::unique_lock lock(pending->mu);
  if (!pending->cv.wait_for(lock, timeout, [&] { return pending->done; })) {
    pending->abandoned = true;
    g_abandoned.fetch_add(1, std::memory_order_acq_rel);
    return absl::DeadlineExceededError(
        absl::StrCat("cannot resolve ", host, " within ", timeout.count(),
                     " ms (the DNS server does not answer?)"));
  }
  return std::move(pending->result);
}

}  // namespace tandem::planner
