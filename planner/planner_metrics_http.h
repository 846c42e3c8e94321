// The planner's HTTP port (--metrics-port): GET /metrics (PlannerMetrics)
// and GET /health. It serves only what the planner publishes and reads no
// body, so it needs no authentication; it listens where it is told
// (default loopback).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "common/http/http_server.h"
#include "planner/planner_metrics.h"

namespace tandem::planner {

// `metrics` must outlive the server. Errors: HttpServer::start's.
absl::StatusOr<http::HttpServerPtr> startPlannerMetricsHttp(const std::string& host, int port,
                                                            PlannerMetrics* metrics);

}  // namespace tandem::planner
