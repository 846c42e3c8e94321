// The router's gRPC server: tandem.v1.Inference, the standard
// grpc.health.v1.Health for the server ("") and for "tandem.v1.Inference"
// alike (SERVING once serving and a worker is ready, NOT_SERVING before and
// while draining), and server reflection, grpc.reflection.v1alpha and v1
// (grpcurl, grpcui).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "router/grpc/inference_service.h"

namespace tandem::router {

class GrpcServer;
using GrpcServerPtr = std::unique_ptr<GrpcServer>;

class GrpcServer {
 public:
  // listens on host:port (port 0 = any free port) and serves. Unavailable
  // when the address cannot be bound.
  // Inference admits calls through `admission`, which must outlive the
  // server (the OpenAI front end shares it).
  static absl::StatusOr<GrpcServerPtr> start(const std::string& host, int port,
                                             Admission* admission);
  // listens before the model is known (a router waiting for workers):
  // tandem.v1.Inference answers UNAVAILABLE and health NOT_SERVING until
  // serve(); `extra_services` (not owned; they must outlive the server, e.g.
  // tandem.v1.Registry) are served from the start. `admission` null = no model yet.
  // `credentials`: how the port listens (e.g. TLS,
  // grpc_util::reloadableServerCredentials); null = plain.
  static absl::StatusOr<GrpcServerPtr> start(
      const std::string& host, int port, Admission* admission,
      const std::vector<grpc::Service*>& extra_services,
      std::shared_ptr<grpc::ServerCredentials> credentials = nullptr);
  // serves the model of admission->context() through `admission` (once):
  // Inference answers, health SERVING.
  void serve(Admission* admission);
  ~GrpcServer();

  int port() const { return port_; }
  // health follows the generator: SERVING when `ready` (it can take
  // requests, e.g. a decode worker is healthy), NOT_SERVING otherwise. No
  // effect before serve() or once draining.
  void setReady(bool ready);
  // health says NOT_SERVING from now on.
  void setDraining();
  // lets calls in progress finish until `grace`, then cancels the rest.
  void shutdown(std::chrono::milliseconds grace);

 private:
  GrpcServer() = default;

  std::unique_ptr<InferenceService> service_;
  // declared before server_: gRPC may consult them while the server lives.
  std::shared_ptr<grpc::ServerCredentials> credentials_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::atomic<bool> serving_{false};
  std::atomic<bool> draining_{false};
  std::atomic<int> ready_{-1};  // last status set by setReady; -1 = none
  bool stopped_ = false;
};

}  // namespace tandem::router
