#include "planner/planner_metrics_http.h"

namespace tandem::planner {

absl::StatusOr<http::HttpServerPtr> startPlannerMetricsHttp(const std::string& host, int port,
                                                            PlannerMetrics* metrics) {
  http::HttpServerOptions options;
  options.host = host;
  options.port = port;
  options.num_threads = 1;
  options.max_body_bytes = 1024;
  options.max_connections = 64;
  return http::HttpServer::start(options, [metrics](http::HttpRequest request, http::ResponseWriterPtr writer) {
    if (request.method != "GET") {
      writer->respond(405, {{"Content-Type", "text/plain"}}, "only GET\n");
    } else if (request.path == "/metrics") {
      writer->respond(200, {{"Content-Type", "text/plain; version=0.0.4"}}, metrics->render());
    } else if (request.path == "/health") {
      writer->respond(200, {{"Content-Type", "text/plain"}}, "ok\n");
    } else {
      writer->respond(404, {{"Content-Type", "text/plain"}}, "not found\n");
    }
  });
}

}  // namespace tandem::planner
