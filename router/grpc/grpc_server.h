// The router's gRPC server: tandem.v1.Inference, the standard
// grpc.health.v1.Health (SERVING once started, NOT_SERVING while draining)
// and server reflection (grpcurl, grpcui).
#pragma once

#include <chrono>
#include <memory>
#include <string>

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
  static absl::StatusOr<GrpcServerPtr> start(const std::string& host, int port,
                                             const JobContext& context);
  ~GrpcServer();

  int port() const { return port_; }
  // health says NOT_SERVING from now on.
  void setDraining();
  // lets calls in progress finish until `grace`, then cancels the rest.
  void shutdown(std::chrono::milliseconds grace);

 private:
  GrpcServer() = default;

  std::unique_ptr<InferenceService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  bool stopped_ = false;
};

}  // namespace tandem::router
