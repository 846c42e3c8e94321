#include "router/cluster/registry_service.h"

namespace tandem::router::cluster {

grpc::ServerUnaryReactor* RegistryService::Register(grpc::CallbackServerContext* context,
                                                    const tandem::v1::WorkerInfo* request,
                                                    tandem::v1::RegisterResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (!pool_->registerWorker(*request)) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 "a worker registers with its address, worker_id and a role "
                                 "of prefill, decode or both"));
    return reactor;
  }
  response->set_heartbeat_interval_ms(pool_->options().heartbeat_interval_ms);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* RegistryService::Deregister(grpc::CallbackServerContext* context,
                                                      const tandem::v1::DeregisterRequest* request,
                                                      tandem::v1::DeregisterResponse* response) {
  pool_->deregisterWorker(request->worker_id());
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace tandem::router::cluster
