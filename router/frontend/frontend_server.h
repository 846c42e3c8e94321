// The router's front door: the OpenAI HTTP server and the tandem gRPC
// server over one model and one generation::Generator, with their metrics
// and one Admission for both (one API key list, one capacity budget, one
// pool of preparing threads). HTTP
// starts first and answers /health 503 until the model is being served, so
// orchestrators can watch a slow start; gRPC starts with the model (or at
// once, with FrontendOptions::grpc_at_start).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/timer_queue.h"
#include "common/http/http_server.h"
#include "common/tls/certificate_store.h"
#include "router/generate/access_log.h"
#include "router/generate/admission.h"
#include "router/generate/openai_service.h"
#include "router/generate/served_model.h"
#include "router/grpc/grpc_server.h"
#include "router/metrics/serving_metrics.h"

namespace tandem::router {

struct FrontendOptions {
  std::string host = "127.0.0.1";
  int http_port = 8000;  // 0 = any free port
  int grpc_port = 8001;  // 0 = any free port; -1 = no gRPC
  int http_threads = 2;
  size_t max_request_bytes = 4 << 20;
  std::chrono::milliseconds request_timeout{30000};
  // HTTPS and gRPC over TLS with the store's certificate (re-read by its
  // reload(), e.g. on SIGHUP; a client CA in it makes both ports require
  // client certificates); null = plain HTTP and gRPC.
  tls::CertificateStorePtr tls;
  // both front ends' admission: API keys, capacity, prompt limits,
  // preparing threads.
  AdmissionOptions admission;
  // start gRPC in start(), before the model is known (a router: its port
  // is known and printed at once); tandem.v1.Inference answers UNAVAILABLE
  // until serve(). Otherwise gRPC starts in serve(). The router's workers
  // register on its internal port (router/cluster/registry_server.h), never
  // on this public one.
  bool grpc_at_start = false;
  // more services on the gRPC port (not owned; they must outlive the
  // server), e.g. tandem.v1.Registry. Needs grpc_at_start.
  std::vector<grpc::Service*> extra_grpc_services;
  // one line per request answered, HTTP and gRPC (access_log.h); null = none.
  AccessLogPtr access_log;
};

class FrontendServer;
using FrontendServerPtr = std::unique_ptr<FrontendServer>;

class FrontendServer {
 public:
  // starts the HTTP server (not ready yet). Unavailable when the port is taken.
  static absl::StatusOr<FrontendServerPtr> start(const FrontendOptions& options);
  ~FrontendServer();

  // serves `model` on `generator` (which must outlive the server): HTTP
  // becomes ready and gRPC starts listening.
  absl::Status serve(ServedModelPtr model, generation::Generator* generator);

  // stops taking requests (health 503 / NOT_SERVING, new generations 503 /
  // UNAVAILABLE), lets those in progress finish until `grace`, then closes
  // everything. The gRPC port answers (health NOT_SERVING) until the calls
  // in progress are done.
  void drainAndStop(std::chrono::milliseconds grace);

  int httpPort() const { return http_->port(); }
  int grpcPort() const { return grpc_ ? grpc_->port() : -1; }
  ServingMetrics& metrics() { return *metrics_; }

 private:
  FrontendServer() = default;
  // the gRPC port's credentials: TLS following options_.tls, or null (plain).
  std::shared_ptr<grpc::ServerCredentials> grpcCredentials() const;
  // once a second while serving (on housekeeping_): keeps gRPC health in
  // step with the generator's readiness and, while idle, hands freed heap
  // back to the OS (glibc keeps it otherwise), so the process returns to
  // its baseline after a burst of load.
  void trimWhileIdle();

  FrontendOptions options_;
  std::unique_ptr<ServingMetrics> metrics_;
  std::unique_ptr<OpenAiService> service_;
  ServedModelPtr model_;
  // both front ends admit through it; created by serve(), stopped after
  // them (its preparing threads may still answer their calls).
  std::unique_ptr<Admission> admission_;
  http::HttpServerPtr http_;
  GrpcServerPtr grpc_;
  generation::Generator* generator_ = nullptr;
  bool trimmed_ = true;  // since the last busy tick; on housekeeping_'s thread only
  // started by serve(); stopped first by drainAndStop().
  std::unique_ptr<TimerQueue> housekeeping_;
};

}  // namespace tandem::router
