#include "router/frontend/frontend_server.h"

#include <malloc.h>

#include <algorithm>
#include <thread>

#include "common/grpc/reloadable_server_credentials.h"
#include "router/openai/api_error.h"

namespace tandem::router {

absl::StatusOr<FrontendServerPtr> FrontendServer::start(const FrontendOptions& options) {
  FrontendServerPtr s(new FrontendServer());
  s->options_ = options;
  s->metrics_ = std::make_unique<ServingMetrics>();
  s->service_ = std::make_unique<OpenAiService>(s->metrics_.get());
  s->service_->setAccessLog(options.access_log);
  http::HttpServerOptions http;
  http.host = options.host;
  http.port = options.http_port;
  http.num_threads = options.http_threads;
  http.max_body_bytes = options.max_request_bytes;
  http.request_timeout = options.request_timeout;
  http.error_body = openai::serverErrorBody;
  http.tls = options.tls;
  absl::StatusOr<http::HttpServerPtr> server = http::HttpServer::start(http, s->service_->handler());
  if (!server.ok()) return server.status();
  s->http_ = std::move(*server);
  if (options.grpc_at_start && options.grpc_port >= 0) {
    absl::StatusOr<GrpcServerPtr> grpc =
        GrpcServer::start(options.host, options.grpc_port, nullptr, {}, s->grpcCredentials());
    if (!grpc.ok()) return grpc.status();
    s->grpc_ = std::move(*grpc);
  }
  return s;
}

FrontendServer::~FrontendServer() { drainAndStop(std::chrono::milliseconds(0)); }

absl::Status FrontendServer::serve(ServedModelPtr model, generation::Generator* generator) {
  model_ = std::move(model);
  CallContext context;
  context.model = model_.get();
  context.generator = generator;
  context.metrics = metrics_.get();
  context.access_log = options_.access_log;
  metrics_->setLoadSource([generator] { return generator->load(); });
  admission_ = std::make_unique<Admission>(context, options_.admission);
  if (grpc_ != nullptr) {
    grpc_->serve(admission_.get());
  } else if (options_.grpc_port >= 0) {
    absl::StatusOr<GrpcServerPtr> grpc =
        GrpcServer::start(options_.host, options_.grpc_port, admission_.get(), {}, grpcCredentials());
    if (!grpc.ok()) return grpc.status();
    grpc_ = std::move(*grpc);
  }
  service_->setReady(admission_.get());
  generator_ = generator;
  housekeeping_ = std::make_unique<TimerQueue>("frontend-trim");
  housekeeping_->runEvery(std::chrono::seconds(1), [this] { trimWhileIdle(); });
  return absl::OkStatus();
}

std::shared_ptr<grpc::ServerCredentials> FrontendServer::grpcCredentials() const {
  if (options_.tls == nullptr) return nullptr;
  return grpc_util::reloadableServerCredentials(options_.tls);
}

void FrontendServer::trimWhileIdle() {
  const generation::GeneratorLoad load = generator_->load();
  const bool idle = load.num_running == 0 && load.num_waiting == 0 && admission_->pending() == 0;
  // once per idle period: trimming walks the whole heap.
  if (idle && !trimmed_) malloc_trim(0);
  trimmed_ = idle;
  // gRPC health follows the generator as /health does (e.g. no healthy
  // decode worker behind the router → NOT_SERVING).
  if (grpc_) grpc_->setReady(generator_->ready());
}

void FrontendServer::drainAndStop(std::chrono::milliseconds grace) {
  if (housekeeping_ != nullptr) housekeeping_->stop();
  if (http_ == nullptr) return;
  service_->setDraining();
  if (grpc_) grpc_->setDraining();
  const auto deadline = std::chrono::steady_clock::now() + grace;
  // gRPC and HTTP drain side by side. The gRPC port stays open while calls
  // are in flight (new ones are refused UNAVAILABLE by the admission), so
  // a health probe sees NOT_SERVING rather than a closed port; gRPC's
  // Shutdown would refuse every new call at once, health checks too.
  std::thread grpc_stop([&] {
    if (!grpc_) return;
    while (admission_ != nullptr && admission_->pending() > 0 &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    grpc_->shutdown(std::chrono::duration_cast<std::chrono::milliseconds>(
        std::max(deadline - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration{0})));
  });
  http_->shutdown(grace);
  grpc_stop.join();
  // no front end hands it work any more; what it still holds is answered
  // into closed connections and streams.
  if (admission_ != nullptr) admission_->stop();
  grpc_.reset();
  http_.reset();
}

}  // namespace tandem::router
