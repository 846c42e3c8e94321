// tandem.v1.Registry on the router's gRPC port: workers register (and
// re-register every heartbeat) and deregister when they shut down.
#pragma once

#include "router/cluster/worker_pool.h"
#include "tandem/v1/worker.grpc.pb.h"

namespace tandem::router::cluster {

class RegistryService final : public tandem::v1::Registry::CallbackService {
 public:
  // `pool` must outlive the service.
  explicit RegistryService(WorkerPool* pool) : pool_(pool) {}

  // tandem::v1::Registry::CallbackService
  // INVALID_ARGUMENT for an info without address or worker_id, or an unknown role.
  grpc::ServerUnaryReactor* Register(grpc::CallbackServerContext* context,
                                     const tandem::v1::WorkerInfo* request,
                                     tandem::v1::RegisterResponse* response) override;
  grpc::ServerUnaryReactor* Deregister(grpc::CallbackServerContext* context,
                                       const tandem::v1::DeregisterRequest* request,
                                       tandem::v1::DeregisterResponse* response) override;

 private:
  WorkerPool* pool_;
};

}  // namespace tandem::router::cluster
