#include "router/grpc/inference_service.h"

#include "router/grpc/generate_reactor.h"

namespace tandem::router {

grpc::ServerWriteReactor<tandem::v1::GenerateResponse>* InferenceService::Generate(
    grpc::CallbackServerContext* context, const tandem::v1::GenerateRequest* request) {
  return new GenerateReactor(context_, *request);
}

grpc::ServerUnaryReactor* InferenceService::ListModels(grpc::CallbackServerContext* context,
                                                       const tandem::v1::ListModelsRequest* request,
                                                       tandem::v1::ListModelsResponse* response) {
  auto* model = response->add_models();
  model->set_id(context_.model->name());
  model->set_max_context(context_.model->maxModelLen());
  context_.metrics->countRequest("grpc_list_models", 0);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace tandem::router
