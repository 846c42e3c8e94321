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
#include "router/generate/generation_call.h"
#include "router/generate/request_record.h"
#include "tandem/v1/inference.pb.h"

namespace tandem::router {

// the access-log record of a gRPC call to `method` on the served model
// (its id: the client's `client_id` when usable, common/crash_report.h
// holds it while the call runs).
RequestRecordPtr grpcRecord(const CallContext& served, const grpc::CallbackServerContext& context,
                            std::string method, std::string_view client_id);

class InferenceGenerateCall final : public GenerationCall,
                                    public grpc_util::StreamObserver,
                                    public std::enable_shared_from_this<InferenceGenerateCall> {
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

  InferenceGenerateCall(const CallContext& context, std::shared_ptr<Writer> writer, AdmissionSlot slot,
                        RequestRecordPtr record);

  // grpc_util::StreamObserver
  void onStreamBroken() override;
  void onStreamDone(const std::optional<grpc::Status>& status) override;

 private:
  // on a preparing thread: parses, admits and submits; on error ends the
  // call with it.
  void submit(Admission& admission, const grpc::ByteBuffer& body);
  void onOutput(const generation::TokenOutput& output);
  // the message for one output; sets `finish` (from kNone) when it is the
  // last one.
  // The first output's prompt scores go out before it (writePromptLogprobs).
  tandem::v1::GenerateResponse responseFor(const generation::TokenOutput& output,
                                           generation::FinishReason* finish);
  // the prompt's scores of `output` (the first), with the prompt's first
  // token in front, in messages of their own.
  void writePromptLogprobs(const generation::TokenOutput& output);

  const std::shared_ptr<Writer> writer_;
  const RequestRecordPtr record_;
  std::optional<ChoiceTextStream> text_;              // guarded by mu_
  int prompt_tokens_ = 0;
  int32_t prompt_first_token_ = 0;
  // params.prompt_logprobs was set; with max_tokens 0 (score_only_) the
  // prompt is scored and the one token generated is dropped.
  bool parsed_prompt_logprobs_ = false;
  bool score_only_ = false;
  bool prompt_logprobs_sent_ = false;                 // guarded by mu_
  CallMetrics::ChoiceTiming timing_;                  // and the completion tokens; guarded by mu_
};

}  // namespace tandem::router
