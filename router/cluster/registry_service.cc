#include "router/cluster/registry_service.h"

#include "common/grpc/completion_thread.h"
#include "common/grpc/status_mapping.h"

namespace tandem::router::cluster {
namespace {

// one unary call from when it is awaited until its answer was sent.
template <typename Request, typename Response>
struct UnaryCall {
  grpc::ServerContext context;
  Request request;
  Response response;
  grpc::ServerAsyncResponseWriter<Response> responder{&context};
};

}  // namespace

template <typename Request, typename Response, typename RequestFn, typename HandleFn>
void RegistryService::accept(RequestFn request, HandleFn handle) {
  auto* call = new UnaryCall<Request, Response>();
  calls_->start(
      [this, call, request, handle](bool ok) mutable {
        if (!ok) {  // the server shuts down: no call came
          delete call;
          return;
        }
        accept<Request, Response>(request, handle);
        const grpc::Status status = handle(call->context, call->request, &call->response);
        calls_->start([call](bool) { delete call; },
                      [call, &status](void* sent) {
                        if (status.ok()) {
                          call->responder.Finish(call->response, status, sent);
                        } else {
                          call->responder.FinishWithError(status, sent);
                        }
                      });
      },
      [call, &request](void* tag) {
        request(&call->context, &call->request, &call->responder, tag);
      });
}

void RegistryService::serve(grpc_util::CompletionThread* calls, grpc::ServerCompletionQueue* queue) {
  calls_ = calls;
  queue_ = queue;
  accept<tandem::v1::WorkerInfo, tandem::v1::RegisterResponse>(
      [this](grpc::ServerContext* context, tandem::v1::WorkerInfo* request,
             grpc::ServerAsyncResponseWriter<tandem::v1::RegisterResponse>* responder, void* tag) {
        service_.RequestRegister(context, request, responder, queue_, queue_, tag);
      },
      [this](const grpc::ServerContext& context, const tandem::v1::WorkerInfo& request,
             tandem::v1::RegisterResponse* response) {
        return registerWorker(context, request, response);
      });
  accept<tandem::v1::DeregisterRequest, tandem::v1::DeregisterResponse>(
      [this](grpc::ServerContext* context, tandem::v1::DeregisterRequest* request,
             grpc::ServerAsyncResponseWriter<tandem::v1::DeregisterResponse>* responder, void* tag) {
        service_.RequestDeregister(context, request, responder, queue_, queue_, tag);
      },
      [this](const grpc::ServerContext& context, const tandem::v1::DeregisterRequest& request,
             tandem::v1::DeregisterResponse*) { return deregisterWorker(context, request); });
}

grpc::Status RegistryService::registerWorker(const grpc::ServerContext& context,
                                             const tandem::v1::WorkerInfo& request,
                                             tandem::v1::RegisterResponse* response) {
  if (grpc::Status s = auth_->check(context); !s.ok()) return s;
  if (absl::Status s = pool_->registerWorker(request); !s.ok()) return grpc_util::toGrpcStatus(s);
  response->set_heartbeat_interval_ms(pool_->options().heartbeat_interval_ms);
  return grpc::Status::OK;
}

grpc::Status RegistryService::deregisterWorker(const grpc::ServerContext& context,
                                               const tandem::v1::DeregisterRequest& request) {
  if (grpc::Status s = auth_->check(context); !s.ok()) return s;
  pool_->deregisterWorker(request.worker_id(), request.draining());
  return grpc::Status::OK;
}

}  // namespace tandem::router::cluster
