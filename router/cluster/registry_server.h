// The router's internal gRPC listener: tandem.v1.Registry, where workers
// register. It is a port of its own, apart from the public one
// (tandem.v1.Inference), so that only the cluster reaches it: calls need the
// cluster's authentication (a shared secret, mutual TLS), and without any
// it binds loopback addresses only unless the operator allowed otherwise
// (ClusterAuth::checkListenHost).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/grpc/cluster_auth.h"
#include "common/grpc/completion_thread.h"
#include "grpcpp/grpcpp.h"
#include "router/cluster/registry_service.h"
#include "router/cluster/worker_pool.h"

namespace tandem::router::cluster {

struct RegistryServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0 = any free port
  grpc_util::ClusterAuthPtr auth = grpc_util::ClusterAuth::none();
};

class RegistryServer;
using RegistryServerPtr = std::unique_ptr<RegistryServer>;

class RegistryServer {
 public:
  // listens and serves the registry of `pool` (which must outlive the
  // server). FailedPrecondition when options.auth refuses the host
  // (checkListenHost); Unavailable when the address cannot be bound.
  static absl::StatusOr<RegistryServerPtr> start(const RegistryServerOptions& options,
                                                 WorkerPool* pool);
  // shutdown(0).
  ~RegistryServer();

  int port() const { return port_; }
  // lets calls in progress finish until `grace`, then cancels the rest. Idempotent.
  void shutdown(std::chrono::milliseconds grace);

 private:
  RegistryServer() = default;

  std::unique_ptr<RegistryService> service_;
  // drains the server's queue: where every registry call is answered.
  std::unique_ptr<grpc_util::CompletionThread> calls_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace tandem::router::cluster
