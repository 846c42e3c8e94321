#include "server/worker/metrics_http.h"

namespace tandem::worker {

absl::StatusOr<http::HttpServerPtr> startMetricsHttp(const std::string& host, int port,
                                                     WorkerMetrics* metrics,
                                                     const std::atomic<bool>* draining) {
  http::HttpServerOptions options;
  options.host = host;
  options.port = port;
  options.num_threads = 1;
  return http::HttpServer::start(
      options, [metrics, draining](http::HttpRequest request, http::ResponseWriterPtr writer) {
        if (request.method != "GET") {
          writer->respond(405, {{"Content-Type", "text/plain"}}, "only GET\n");
        } else if (request.path == "/metrics") {
          writer->respond(200, {{"Content-Type", "text/plain; version=0.0.4"}}, metrics->render());
        } else if (request.path == "/health") {
          if (draining->load()) {
            writer->respond(503, {{"Content-Type", "text/plain"}}, "draining\n");
          } else {
            writer->respond(200, {{"Content-Type", "text/plain"}}, "ok\n");
          }
        } else {
          writer->respond(404, {{"Content-Type", "text/plain"}}, "not found\n");
        }
      });
}

}  // namespace tandem::worker
