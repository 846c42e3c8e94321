// tandem.v1.Registry on the router's internal port (RegistryServer): workers
// register (and re-register every heartbeat) and deregister when they shut
// down. Every call must pass the cluster's authentication first
// (ClusterAuth::check), then what the worker reports is checked
// (WorkerPool::registerWorker).
#pragma once

#include "common/grpc/cluster_auth.h"
#include "router/cluster/worker_pool.h"
#include "tandem/v1/worker.grpc.pb.h"

namespace tandem::router::cluster {

class RegistryService final : public tandem::v1::Registry::CallbackService {
 public:
  // `pool` must outlive the service.
  RegistryService(WorkerPool* pool, grpc_util::ClusterAuthPtr auth)
      : pool_(pool), auth_(std::move(auth)) {}

  // tandem::v1::Registry::CallbackService
  // UNAUTHENTICATED without the cluster secret; INVALID_ARGUMENT for an
  // info checkWorkerInfo refuses; FAILED_PRECONDITION for a worker of
  // another model than the one served.
  grpc::ServerUnaryReactor* Register(grpc::CallbackServerContext* context,
                                     const tandem::v1::WorkerInfo* request,
                                     tandem::v1::RegisterResponse* response) override;
  // UNAUTHENTICATED without the cluster secret.
  grpc::ServerUnaryReactor* Deregister(grpc::CallbackServerContext* context,
                                       const tandem::v1::DeregisterRequest* request,
                                       tandem::v1::DeregisterResponse* response) override;

 private:
  WorkerPool* pool_;
  const grpc_util::ClusterAuthPtr auth_;
};

}  // namespace tandem::router::cluster
