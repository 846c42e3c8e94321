// tandem.v1.Inference over gRPC (callback API): Generate streams one
// message per generated token (ids, whole-UTF-8 text delta, logprobs), the
// last one with finish_reason and usage; ListModels names the served model.
// A cancelled call (client gone, deadline) cancels the generation.
// Generate goes through the same Admission as the OpenAI API, with what it
// skips today: no API key, no capacity limit (429), no prompt limits; the
// generator's own refusals are classified as for HTTP.
#pragma once

#include <atomic>
#include <memory>

#include "router/generate/admission.h"
#include "router/generate/call_context.h"
#include "tandem/v1/inference.grpc.pb.h"

namespace tandem::router {

class InferenceService final : public tandem::v1::Inference::CallbackService {
 public:
  // `context`'s members must outlive the service.
  explicit InferenceService(const CallContext& context) { setContext(context); }
  // a service without a model yet (a router waiting for its workers):
  // every call answers UNAVAILABLE until setContext().
  InferenceService() = default;
  // serves `context` from now on; call once, before or while serving.
  void setContext(const CallContext& context);

  // tandem::v1::Inference::CallbackService
  grpc::ServerWriteReactor<tandem::v1::GenerateResponse>* Generate(
      grpc::CallbackServerContext* context, const tandem::v1::GenerateRequest* request) override;
  grpc::ServerUnaryReactor* ListModels(grpc::CallbackServerContext* context,
                                       const tandem::v1::ListModelsRequest* request,
                                       tandem::v1::ListModelsResponse* response) override;

 private:
  CallContext context_;                   // written once, before ready_
  std::unique_ptr<Admission> admission_;  // written once, before ready_
  std::atomic<bool> ready_{false};
};

}  // namespace tandem::router
