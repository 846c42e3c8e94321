#include "router/grpc/inference_service.h"

#include <string_view>

#include "common/grpc/byte_buffer_message.h"
#include "router/grpc/admission_grpc_status.h"
#include "router/grpc/inference_generate_call.h"

namespace tandem::router {

namespace {

// answers a streaming call with one status and no message.
class FinishedWriter final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  explicit FinishedWriter(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

// the call's `authorization` metadata ("" when absent); gRPC keys are lower case.
std::string_view authorization(const grpc::CallbackServerContext& context) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) return {};
  return std::string_view(it->second.data(), it->second.size());
}

}  // namespace

void InferenceService::setAdmission(Admission* admission) {
  admission_ = admission;
  ready_.store(true, std::memory_order_release);
}

grpc::Status InferenceService::checkCaller(const grpc::CallbackServerContext& context) const {
  if (!ready_.load(std::memory_order_acquire)) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        "no model is served yet (waiting for workers)");
  }
  if (auto error = admission_->checkCredentials(authorization(context))) {
    return toGrpcStatus(*error);
  }
  return grpc::Status::OK;
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* InferenceService::Generate(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request) {
  if (grpc::Status status = checkCaller(*context); !status.ok()) {
    // before the model is served there is no access log to write to yet.
    if (ready_.load(std::memory_order_acquire)) {
      grpcRecord(admission_->context(), *context, "/tandem.v1.Inference/Generate", "")
          ->finish(status.error_code());
    }
    return new FinishedWriter(status);
  }
  return InferenceGenerateCall::start(*admission_, *request, context, authorization(*context));
}

grpc::ServerUnaryReactor* InferenceService::ListModels(grpc::CallbackServerContext* context,
                                                       const grpc::ByteBuffer* request,
                                                       grpc::ByteBuffer* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  grpc::Status status = checkCaller(*context);
  tandem::v1::ListModelsRequest parsed;
  if (status.ok()) status = grpc_util::fromByteBuffer(*request, &parsed);
  if (!status.ok()) {
    if (ready_.load(std::memory_order_acquire)) {
      grpcRecord(admission_->context(), *context, "/tandem.v1.Inference/ListModels", "")
          ->finish(status.error_code());
    }
    reactor->Finish(status);
    return reactor;
  }
  const CallContext& served = admission_->context();
  grpcRecord(served, *context, "/tandem.v1.Inference/ListModels", "")->finish(grpc::StatusCode::OK);
  tandem::v1::ListModelsResponse list;
  auto* model = list.add_models();
  model->set_id(served.model->name());
  model->set_max_context(served.model->maxModelLen());
  *response = grpc_util::toByteBuffer(list);
  served.metrics->countRequest("grpc_list_models", 0);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace tandem::router
