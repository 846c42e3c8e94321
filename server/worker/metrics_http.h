// The worker's HTTP endpoint on the project's HTTP server: GET /metrics
// (Prometheus text), GET /health (200 while serving, 503 once draining),
// GET /live (200 while the process serves HTTP at all: a liveness probe
// that stays up while the worker drains), and /drain for the pod's own
// preStop hook (`tandem worker drain`): POST begins draining, GET tells how
// far it got, both as {"draining": bool, "in_flight": N}. /drain answers
// only loopback peers (the pod itself; 403 otherwise): a stranger who
// reaches the metrics port cannot take the worker out of service.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "common/http/http_server.h"
#include "server/worker/worker_metrics.h"

namespace tandem::worker {

// what /drain drives. Both are called on the HTTP thread.
struct DrainHooks {
  // starts draining (idempotent; returns once the worker left routing).
  std::function<void()> begin;
  // requests running, waiting or transferring KV on this worker now.
  std::function<int()> in_flight;
};

// serves on host:port (0 = any free port). `metrics` and `draining` must
// outlive the server. Unavailable when the address cannot be bound.
absl::StatusOr<http::HttpServerPtr> startMetricsHttp(const std::string& host, int port,
                                                     WorkerMetrics* metrics,
                                                     const std::atomic<bool>* draining,
                                                     DrainHooks drain);

// true for "127.x.x.x:port", "[::1]:port" and "[::ffff:127.x.x.x]:port".
bool isLoopbackPeer(const std::string& remote_address);

}  // namespace tandem::worker
