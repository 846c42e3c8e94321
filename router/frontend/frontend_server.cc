#include "router/frontend/frontend_server.h"

#include <thread>

namespace tandem::router {

absl::StatusOr<FrontendServerPtr> FrontendServer::start(const FrontendOptions& options) {
  FrontendServerPtr s(new FrontendServer());
  s->options_ = options;
  s->metrics_ = std::make_unique<ServingMetrics>();
  s->service_ = std::make_unique<OpenAiService>(s->metrics_.get(), options.service);
  http::HttpServerOptions http;
  http.host = options.host;
  http.port = options.http_port;
  http.num_threads = options.http_threads;
  http.max_body_bytes = options.max_request_bytes;
  http.request_timeout = options.request_timeout;
  absl::StatusOr<http::HttpServerPtr> server = http::HttpServer::start(http, s->service_->handler());
  if (!server.ok()) return server.status();
  s->http_ = std::move(*server);
  return s;
}

FrontendServer::~FrontendServer() { drainAndStop(std::chrono::milliseconds(0)); }

absl::Status FrontendServer::serve(ServedModelPtr model, GenerateBackend* backend) {
  model_ = std::move(model);
  JobContext context;
  context.model = model_.get();
  context.backend = backend;
  context.metrics = metrics_.get();
  metrics_->setLoadSource([backend] { return backend->load(); });
  if (options_.grpc_port >= 0) {
    absl::StatusOr<GrpcServerPtr> grpc = GrpcServer::start(options_.host, options_.grpc_port, context);
    if (!grpc.ok()) return grpc.status();
    grpc_ = std::move(*grpc);
  }
  service_->setReady(context);
  return absl::OkStatus();
}

void FrontendServer::drainAndStop(std::chrono::milliseconds grace) {
  if (http_ == nullptr) return;
  service_->setDraining();
  if (grpc_) grpc_->setDraining();
  const auto deadline = std::chrono::steady_clock::now() + grace;
  // gRPC and HTTP drain side by side.
  std::thread grpc_stop([&] {
    if (grpc_) grpc_->shutdown(std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now()));
  });
  http_->shutdown(grace);
  grpc_stop.join();
  grpc_.reset();
  http_.reset();
}

}  // namespace tandem::router
