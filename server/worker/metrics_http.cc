#include "server/worker/metrics_http.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace tandem::worker {

bool isLoopbackPeer(const std::string& remote_address) {
  return absl::StartsWith(remote_address, "127.") || absl::StartsWith(remote_address, "[::1]:") ||
         absl::StartsWith(remote_address, "[::ffff:127.");
}

absl::StatusOr<http::HttpServerPtr> startMetricsHttp(const std::string& host, int port,
                                                     WorkerMetrics* metrics,
                                                     const std::atomic<bool>* draining,
                                                     DrainHooks drain) {
  http::HttpServerOptions options;
  options.host = host;
  options.port = port;
  options.num_threads = 1;
  return http::HttpServer::start(
      options, [metrics, draining, drain = std::move(drain)](http::HttpRequest request,
                                                             http::ResponseWriterPtr writer) {
        const std::vector<http::HttpHeader> text = {{"Content-Type", "text/plain"}};
        if (request.path == "/drain") {
          if (!isLoopbackPeer(request.remote_address)) {
            writer->respond(403, text, "/drain answers the pod itself only\n");
            return;
          }
          if (request.method == "POST") {
            drain.begin();
          } else if (request.method != "GET") {
            writer->respond(405, text, "GET or POST\n");
            return;
          }
          writer->respond(200, {{"Content-Type", "application/json"}},
                          absl::StrCat("{\"draining\": ", draining->load() ? "true" : "false",
                                       ", \"in_flight\": ", drain.in_flight(), "}\n"));
        } else if (request.method != "GET") {
          writer->respond(405, text, "only GET\n");
        } else if (request.path == "/metrics") {
          writer->respond(200, {{"Content-Type", "text/plain; version=0.0.4"}}, metrics->render());
        } else if (request.path == "/health") {
          if (draining->load()) {
            writer->respond(503, text, "draining\n");
          } else {
            writer->respond(200, text, "ok\n");
          }
        } else if (request.path == "/live") {
          writer->respond(200, text, "ok\n");
        } else {
          writer->respond(404, text, "not found\n");
        }
      });
}

}  // namespace tandem::worker
