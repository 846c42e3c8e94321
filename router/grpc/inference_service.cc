#include "router/grpc/inference_service.h"

#include "router/grpc/generate_call.h"

namespace tandem::router {

namespace {

const grpc::Status kNoModelYet(grpc::StatusCode::UNAVAILABLE,
                               "no model is served yet (waiting for workers)");

// answers a streaming call with one status and no message.
class UnavailableWriter final : public grpc::ServerWriteReactor<tandem::v1::GenerateResponse> {
 public:
  UnavailableWriter() { Finish(kNoModelYet); }
  void OnDone() override { delete this; }
};

}  // namespace

void InferenceService::setContext(const CallContext& context) {
  context_ = context;
  AdmissionOptions options;
  options.check_prompt_length = false;
  options.empty_model_is_served = true;
  admission_ = std::make_unique<Admission>(context_, std::move(options));
  ready_.store(true, std::memory_order_release);
}

grpc::ServerWriteReactor<tandem::v1::GenerateResponse>* InferenceService::Generate(
    grpc::CallbackServerContext* context, const tandem::v1::GenerateRequest* request) {
  if (!ready_.load(std::memory_order_acquire)) return new UnavailableWriter();
  return GenerateCall::start(*admission_, *request);
}

grpc::ServerUnaryReactor* InferenceService::ListModels(grpc::CallbackServerContext* context,
                                                       const tandem::v1::ListModelsRequest* request,
                                                       tandem::v1::ListModelsResponse* response) {
  if (!ready_.load(std::memory_order_acquire)) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(kNoModelYet);
    return reactor;
  }
  auto* model = response->add_models();
  model->set_id(context_.model->name());
  model->set_max_context(context_.model->maxModelLen());
  context_.metrics->countRequest("grpc_list_models", 0);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace tandem::router
