// One tandem.v1.Inference/Generate call: parses the request (a raw method:
// a body that does not parse is INVALID_ARGUMENT with a message), admits it
// through the Admission the HTTP front end shares (capacity, model, prompt
// limits; the API key is InferenceService's), submits it to the generator
// and streams its tokens to the client in order through the shared
// ServerStreamWriter (one write in flight, the rest queued). The body is
// parsed and the prompt tokenized on the admission's preparing threads (a
// large body on its large lane), not on gRPC's. A client that leaves
// cancels the request on the generator; the call's share of the
// admission's budget is given back when the call ends.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string_view>

#include "common/grpc/server_stream_writer.h"
#include "grpcpp/grpcpp.h"
#include "router/generate/admission.h"
#include "router/generate/call_metrics.h"
#include "router/generate/choice_text_stream.h"
#include "tandem/v1/inference.pb.h"

namespace tandem::router {

class GenerateCall final : public grpc_util::StreamObserver,
                           public std::enable_shared_from_this<GenerateCall> {
 public:
  // GenerateResponse messages, serialized.
  using Writer = grpc_util::ServerStreamWriter<grpc::ByteBuffer>;

  // the reactor gRPC drives for `request`, admitted by `admission` (which,
  // with its context, outlives the call); the call answers through it
  // (errors, as admission_grpc_status.h maps them: RESOURCE_EXHAUSTED when
  // the admission's budget is spent, NOT_FOUND for another model,
  // INVALID_ARGUMENT for an empty or too long prompt, bad params and what
  // the generator refuses, UNAVAILABLE when it cannot take requests now;
  // INTERNAL when the model fails; RESOURCE_EXHAUSTED with trailing
  // metadata `retry-after` (seconds) when the caller's API key is over its
  // rate; INVALID_ARGUMENT when `body` is no tandem.v1.GenerateRequest).
  // An empty model names the served one. `authorization` is the call's API
  // key metadata ("Bearer <key>"), `context` its server context.
  static grpc::ServerWriteReactor<grpc::ByteBuffer>* start(Admission& admission,
                                                          const grpc::ByteBuffer& body,
                                                          grpc::CallbackServerContext* context,
                                                          std::string_view authorization);

  GenerateCall(const CallContext& context, std::shared_ptr<Writer> writer, AdmissionSlot slot);

  // grpc_util::StreamObserver
  void onStreamBroken() override;
  void onStreamDone(const std::optional<grpc::Status>& status) override;

 private:
  // on a preparing thread: parses, admits and submits; on error ends the
  // call with it.
  void submit(Admission& admission, const grpc::ByteBuffer& body);
  void onOutput(const generation::TokenOutput& output);
  // the message for one output; sets `finish` when it is the last one.
  tandem::v1::GenerateResponse responseFor(const generation::TokenOutput& output, std::string* finish);

  const CallContext context_;
  const std::shared_ptr<Writer> writer_;
  std::mutex mu_;
  AdmissionSlot slot_;                                // guarded by mu_
  std::optional<ChoiceTextStream> text_;              // guarded by mu_
  std::optional<generation::RequestId> generator_id_;   // guarded by mu_
  bool generation_done_ = false;                      // guarded by mu_
  int prompt_tokens_ = 0;
  CallMetrics metrics_;
  CallMetrics::ChoiceTiming timing_;                  // and the completion tokens; guarded by mu_
};

}  // namespace tandem::router
