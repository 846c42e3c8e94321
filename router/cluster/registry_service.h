// tandem.v1.Registry on the router's internal port (RegistryServer): workers
// register (and re-register every heartbeat) and deregister when they shut
// down. Every call must pass the cluster's authentication first
// (ClusterAuth::check), then what the worker reports is checked
// (WorkerPool::registerWorker).
//
// An async service: its calls are taken and answered on the server's one
// completion thread (common/grpc/completion_thread.h says why not the
// callback API), so heartbeats from hundreds of workers add no thread.
#pragma once

#include "common/grpc/cluster_auth.h"
#include "common/grpc/completion_thread.h"
#include "router/cluster/worker_pool.h"
#include "tandem/v1/worker.grpc.pb.h"

namespace tandem::router::cluster {

class RegistryService {
 public:
  // `pool` must outlive the service.
  RegistryService(WorkerPool* pool, grpc_util::ClusterAuthPtr auth)
      : pool_(pool), auth_(std::move(auth)) {}

  // what the server builder registers.
  grpc::Service* service() { return &service_; }
  // takes calls from `queue` (the server's, drained by `calls`) until the
  // server shuts down; once, after the server started.
  void serve(grpc_util::CompletionThread* calls, grpc::ServerCompletionQueue* queue);

 private:
  // waits for the next call of one method (`request` asks the service for
  // it); `handle` answers it, and the next is awaited meanwhile.
  template <typename Request, typename Response, typename RequestFn, typename HandleFn>
  void accept(RequestFn request, HandleFn handle);

  // UNAUTHENTICATED without the cluster secret; INVALID_ARGUMENT for an
  // info checkWorkerInfo refuses; FAILED_PRECONDITION for a worker of
  // another model than the one served.
  grpc::Status registerWorker(const grpc::ServerContext& context,
                              const tandem::v1::WorkerInfo& request,
                              tandem::v1::RegisterResponse* response);
  // UNAUTHENTICATED without the cluster secret.
  grpc::Status deregisterWorker(const grpc::ServerContext& context,
                                const tandem::v1::DeregisterRequest& request);

  WorkerPool* pool_;
  const grpc_util::ClusterAuthPtr auth_;
  tandem::v1::Registry::AsyncService service_;
  grpc_util::CompletionThread* calls_ = nullptr;
  grpc::ServerCompletionQueue* queue_ = nullptr;
};

}  // namespace tandem::router::cluster
