// tandem.v1.Inference over gRPC (callback API): Generate streams one
// message per generated token (ids, whole-UTF-8 text delta, logprobs), the
// last one with finish_reason and usage; ListModels names the served model.
// A cancelled call (client gone, deadline) cancels the generation.
//
// Both go through the Admission the OpenAI HTTP front end shares, with the
// same checks: the API key (metadata `authorization: Bearer KEY`, as OpenAI
// clients send it over HTTP; wrong or missing: UNAUTHENTICATED), capacity
// (one budget with HTTP; spent: RESOURCE_EXHAUSTED, HTTP's 429), the model,
// and the prompt against the context and the server's prompt limit
// (INVALID_ARGUMENT). router/grpc/admission_grpc_status.h maps every reason.
#pragma once

#include <atomic>

#include "router/generate/admission.h"
#include "tandem/v1/inference.grpc.pb.h"

namespace tandem::router {

// both methods raw (grpc::ByteBuffer): the service parses its requests
// itself (grpc_util::fromByteBuffer), so a body that does not parse is
// INVALID_ARGUMENT with a message instead of gRPC's UNIMPLEMENTED.
using InferenceRawService = tandem::v1::Inference::WithRawCallbackMethod_Generate<
    tandem::v1::Inference::WithRawCallbackMethod_ListModels<tandem::v1::Inference::Service>>;

class InferenceService final : public InferenceRawService {
 public:
  // `admission` (and its context) must outlive the service.
  explicit InferenceService(Admission* admission) { setAdmission(admission); }
  // a service without a model yet (a router waiting for its workers):
  // every call answers UNAVAILABLE until setAdmission().
  InferenceService() = default;
  // serves admission->context() through `admission` from now on; call
  // once, before or while serving.
  void setAdmission(Admission* admission);

  // tandem::v1::Inference, raw: a GenerateRequest in, GenerateResponses out
  grpc::ServerWriteReactor<grpc::ByteBuffer>* Generate(grpc::CallbackServerContext* context,
                                                      const grpc::ByteBuffer* request) override;
  // a ListModelsRequest in, a ListModelsResponse out
  grpc::ServerUnaryReactor* ListModels(grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;

 private:
  // UNAVAILABLE before setAdmission(), UNAUTHENTICATED without a valid
  // key; OK to go on.
  grpc::Status checkCaller(const grpc::CallbackServerContext& context) const;

  Admission* admission_ = nullptr;  // written once, before ready_
  std::atomic<bool> ready_{false};
};

}  // namespace tandem::router
