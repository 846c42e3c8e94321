// The worker's HTTP endpoint on the project's HTTP server: GET /metrics
// (Prometheus text) and GET /health (200 while serving, 503 once draining).
#pragma once

#include <atomic>
#include <string>

#include "absl/status/statusor.h"
#include "common/http/http_server.h"
#include "server/worker/worker_metrics.h"

namespace tandem::worker {

// serves on host:port (0 = any free port). `metrics` and `draining` must
// outlive the server. Unavailable when the address cannot be bound.
absl::StatusOr<http::HttpServerPtr> startMetricsHttp(const std::string& host, int port,
                                                     WorkerMetrics* metrics,
                                                     const std::atomic<bool>* draining);

}  // namespace tandem::worker
