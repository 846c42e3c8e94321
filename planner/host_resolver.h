// Name resolution bounded in time, for the planner's HTTP(S) client (the
// Kubernetes API server, the router's /metrics). getaddrinfo has no
// timeout of its own: a DNS server that does not answer holds it for
// resolv.conf's timeout × attempts × servers (tens of seconds by default),
// a broken NSS module for ever, and the planner's loop with it. Here the
// lookup runs on a small pool of threads of its own (at most
// kMaxAbandonedLookups, started as needed, kept for the process) and the
// caller waits at most its timeout; a lookup given up on finishes (and
// frees its thread) whenever getaddrinfo returns, and at most
// kMaxAbandonedLookups of them may be pending at once, so a resolver that
// hangs cannot pile up threads or lookups.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "boost/asio/ip/tcp.hpp"

namespace tandem::planner {

using Endpoints = std::vector<boost::asio::ip::tcp::endpoint>;
// a blocking lookup of `host` (a name or an IP literal) and `port`:
// Unavailable when the name does not resolve.
using HostLookup = std::function<absl::StatusOr<Endpoints>(const std::string& host, int port)>;

// lookups given up on that may still be running before new ones are
// refused at once; also the most lookups that run at once (the others
// wait for a thread, within their timeout).
inline constexpr int kMaxAbandonedLookups = 4;

// lookups given up on (timed out) that are still running now.
int abandonedLookups();

// the system's resolver (getaddrinfo through Asio): what resolveHost uses.
absl::StatusOr<Endpoints> systemLookup(const std::string& host, int port);

// the endpoints of `host`:`port`, from `lookup` (the system's unless
// given), waiting at most `timeout`. Errors: `lookup`'s own (Unavailable
// "cannot resolve HOST: ..."); DeadlineExceeded "cannot resolve HOST within
// N ms" when it takes longer; ResourceExhausted when kMaxAbandonedLookups
// lookups given up on are still running. Thread-safe.
absl::StatusOr<Endpoints> resolveHost(const std::string& host, int port,
                                      std::chrono::milliseconds timeout,
                                      const HostLookup& lookup = systemLookup);

}  // namespace tandem::planner
