#include "router/grpc/inference_generate_call.h"

#include <variant>

#include "common/grpc/byte_buffer_message.h"
#include "proto/convert/finish_reason_proto.h"
#include "proto/convert/prompt_logprobs_proto.h"
#include "router/grpc/admission_grpc_status.h"
#include "router/grpc/generate_request.h"

namespace tandem::router {

using tandem::v1::GenerateResponse;

grpc::ServerWriteReactor<grpc::ByteBuffer>* InferenceGenerateCall::start(
    Admission& admission, const grpc::ByteBuffer& body, grpc::CallbackServerContext* context,
    std::string_view authorization) {
  auto* reactor = new grpc_util::ServerStreamReactor<grpc::ByteBuffer>();
  // the access-log id: the client's request_id where the body is small
  // enough to read here (microseconds); a large body is parsed on the large
  // lane, after the record is made, so its id is generated
  std::string client_id;
  if (body.Length() < admission.options().large_body_bytes) {
    tandem::v1::GenerateRequest peek;
    if (grpc_util::fromByteBuffer(body, &peek).ok()) client_id = peek.request_id();
  }
  RequestRecordPtr record =
      grpcRecord(admission.context(), *context, "/tandem.v1.Inference/Generate", client_id);
  std::variant<AdmissionSlot, AdmissionError> slot = admission.reserve(authorization);
  if (auto* error = std::get_if<AdmissionError>(&slot)) {
    addRetryAfter(*error, context);
    const grpc::Status status = toGrpcStatus(*error);
    record->finish(status.error_code());
    reactor->writer()->finish(status);
    return reactor;
  }
  auto call = std::make_shared<InferenceGenerateCall>(admission.context(), reactor->writer(),
                                                      std::move(std::get<AdmissionSlot>(slot)), record);
  reactor->observe(call);
  // gRPC frees `body` when the call ends, which may be before the
  // preparing thread gets to it: the task owns a copy (of the slices'
  // references, not of the bytes).
  std::optional<AdmissionError> refused = admission.offload(
      [call, admission = &admission, body = grpc::ByteBuffer(body)]() { call->submit(*admission, body); },
      body.Length());
  if (refused) reactor->writer()->finish(toGrpcStatus(*refused));
  return reactor;
}

RequestRecordPtr grpcRecord(const CallContext& served, const grpc::CallbackServerContext& context,
                            std::string method, std::string_view client_id) {
  auto record = std::make_shared<RequestRecord>(served.access_log, "grpc", std::move(method),
                                                context.peer(), requestIdFor(client_id));
  if (served.model != nullptr) record->setModel(served.model->name());
  return record;
}

InferenceGenerateCall::InferenceGenerateCall(const CallContext& context, std::shared_ptr<Writer> writer,
                                             AdmissionSlot slot, RequestRecordPtr record)
    : GenerationCall(context, std::move(slot), Clock::now(), record),
      writer_(std::move(writer)),
      record_(std::move(record)) {}

void InferenceGenerateCall::submit(Admission& admission, const grpc::ByteBuffer& body) {
  std::lock_guard lock(mu_);
  // the client left (or the server stopped the call) while it waited.
  if (answered_ || writer_->closed()) return;
  tandem::v1::GenerateRequest request;
  if (grpc::Status parsed = grpc_util::fromByteBuffer(body, &request); !parsed.ok()) {
    writer_->finish(parsed);
    return;
  }
  GrpcGeneration generation = toGeneration(request, context_.model->name());
  openai::GenerationRequest& parsed = generation.request;
  score_only_ = generation.score_only;
  parsed_prompt_logprobs_ = generation.prompt_logprobs;
  // the admission's checks first; invalid params are reported after them.
  auto prepared = admission.admit(slot_, parsed);
  if (auto* error = std::get_if<AdmissionError>(&prepared)) {
    writer_->finish(toGrpcStatus(*error));
    return;
  }
  std::vector<int32_t> tokens = std::move(std::get<std::vector<TokenizedPrompt>>(prepared).front().tokens);
  if (!generation.params.ok()) {
    writer_->finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 std::string(generation.params.message())));
    return;
  }
  const ServedModel& model = *context_.model;
  std::vector<std::string> stop(request.params().stop().begin(), request.params().stop().end());
  text_.emplace(model.tokenizer(), std::move(stop), false, true);
  prompt_tokens_ = static_cast<int>(tokens.size());
  prompt_first_token_ = tokens.front();
  timing_ = metrics_.startChoice();
  auto self = shared_from_this();
  absl::StatusOr<generation::RequestId> id = submitSequence(
      std::move(tokens), std::move(parsed.sampling),
      [self](const generation::TokenOutput& out) { self->onOutput(out); });
  if (!id.ok()) {
    writer_->finish(toGrpcStatus(admission.submitRefused(id.status())));
  }
}

void InferenceGenerateCall::writePromptLogprobs(const generation::TokenOutput& output) {
  // the first prompt token has no context: its entry has no logprob.
  std::vector<generation::PromptTokenLogprob> scores;
  scores.reserve(output.prompt_logprobs.size() + 1);
  scores.push_back({.token = prompt_first_token_});
  scores.insert(scores.end(), output.prompt_logprobs.begin(), output.prompt_logprobs.end());
  rpc::forEachPromptLogprobsPart(scores, [&](std::span<const generation::PromptTokenLogprob> part) {
    GenerateResponse msg;
    rpc::appendPromptLogprobs(part, msg.mutable_prompt_logprobs());
    if (part.data() == scores.data()) msg.mutable_prompt_logprobs(0)->clear_logprob();
    writer_->write(grpc_util::toByteBuffer(msg));
  });
}

GenerateResponse InferenceGenerateCall::responseFor(const generation::TokenOutput& output,
                                                   generation::FinishReason* finish) {
  GenerateResponse msg;
  if (!prompt_logprobs_sent_ && parsed_prompt_logprobs_ && output.token >= 0) {
    prompt_logprobs_sent_ = true;
    writePromptLogprobs(output);
  }
  if (score_only_ && output.token >= 0) {
    // the prompt is scored: the token asked for is not the client's.
    cancelAll();
    *finish = generation::FinishReason::kLength;
    return msg;
  }
  if (output.token >= 0) {
    metrics_.tokenArrived(timing_);
    msg.add_token_ids(output.token);
    msg.set_text(text_->push(output.token));
    if (!output.top_logprobs.empty()) {
      auto* lp = msg.add_logprobs();
      lp->set_token_id(output.token);
      lp->set_logprob(output.logprob);
      auto* tops = msg.add_top_logprobs();
      for (const generation::TokenLogprob& t : output.top_logprobs) {
        auto* top = tops->add_top();
        top->set_token_id(t.token);
        top->set_logprob(t.logprob);
      }
    }
  }
  if (text_->stopped()) {
    cancelAll();
    *finish = generation::FinishReason::kStop;
    msg.set_stop_reason(text_->matchedStop());
  } else if (output.finished()) {
    // kError never gets here: onOutput ended the call with INTERNAL.
    *finish = output.finish_reason;
    *msg.mutable_text() += text_->finish();
  }
  return msg;
}

void InferenceGenerateCall::onOutput(const generation::TokenOutput& output) {
  std::lock_guard lock(mu_);
  if (answered_) return;
  if (output.finish_reason == generation::FinishReason::kError) {
    answered_ = true;
    writer_->finish(grpc::Status(grpc::StatusCode::INTERNAL, "the model failed while generating"));
    return;
  }
  generation::FinishReason finish = generation::FinishReason::kNone;
  GenerateResponse msg = responseFor(output, &finish);
  if (finish == generation::FinishReason::kNone) {
    writer_->write(grpc_util::toByteBuffer(msg));
    return;
  }
  answered_ = true;
  msg.set_finish(rpc::toProto(finish));
  msg.set_finish_reason(std::string(generation::finishReasonName(finish)));
  auto* usage = msg.mutable_usage();
  usage->set_prompt_tokens(prompt_tokens_);
  usage->set_completion_tokens(timing_.tokens);
  usage->set_cached_tokens(output.num_cached_tokens);
  metrics_.completed({{.prompt = prompt_tokens_, .cached = output.num_cached_tokens, .generated = timing_.tokens}});
  writer_->writeLast(grpc_util::toByteBuffer(msg));
}

void InferenceGenerateCall::onStreamBroken() {
  std::lock_guard lock(mu_);
  if (!answered_) cancelAll();
  answered_ = true;
}

void InferenceGenerateCall::onStreamDone(const std::optional<grpc::Status>& status) {
  std::lock_guard lock(mu_);
  const int code = status ? status->error_code() : grpc::StatusCode::CANCELLED;
  metrics_.end("grpc_generate", code);
  record_->finish(code);
}

}  // namespace tandem::router
