#include "router/cluster/registry_service.h"

#include "common/grpc/rejected_call.h"
#include "common/grpc/status_mapping.h"

namespace tandem::router::cluster {

grpc::ServerUnaryReactor* RegistryService::Register(grpc::CallbackServerContext* context,
                                                    const tandem::v1::WorkerInfo* request,
                                                    tandem::v1::RegisterResponse* response) {
  if (grpc::Status s = auth_->check(*context); !s.ok()) return grpc_util::rejectedUnary(context, s);
  if (absl::Status s = pool_->registerWorker(*request); !s.ok()) {
    return grpc_util::rejectedUnary(context, grpc_util::toGrpcStatus(s));
  }
  response->set_heartbeat_interval_ms(pool_->options().heartbeat_interval_ms);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* RegistryService::Deregister(grpc::CallbackServerContext* context,
                                                      const tandem::v1::DeregisterRequest* request,
                                                      tandem::v1::DeregisterResponse* response) {
  if (grpc::Status s = auth_->check(*context); !s.ok()) return grpc_util::rejectedUnary(context, s);
  pool_->deregisterWorker(request->worker_id(), request->draining());
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace tandem::router::cluster
