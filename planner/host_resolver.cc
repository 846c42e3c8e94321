#include "planner/host_resolver.h"

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "boost/asio/io_context.hpp"

namespace tandem::planner {
namespace {

// lookups given up on and still running, over all calls.
std::atomic<int> g_abandoned{0};

// what the lookup thread and the waiting caller share; whoever leaves last
// frees it.
struct Pending {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;        // guarded by mu
  bool abandoned = false;   // guarded by mu: the caller stopped waiting
  absl::StatusOr<Endpoints> result = absl::UnknownError("not resolved");  // guarded by mu
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
  // detached: it may outlive this call (that is the point); it holds what it touches.
  std::thread([pending, lookup, host, port] {
    absl::StatusOr<Endpoints> result = lookup(host, port);
    std::lock_guard lock(pending->mu);
    pending->result = std::move(result);
    pending->done = true;
    if (pending->abandoned) g_abandoned.fetch_sub(1, std::memory_order_acq_rel);
    pending->cv.notify_all();
  }).detach();
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
