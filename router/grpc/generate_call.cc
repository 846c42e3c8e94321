#include "router/grpc/generate_call.h"

#include <variant>

#include "common/grpc/byte_buffer_message.h"
#include "proto/convert/finish_reason_proto.h"
#include "router/grpc/admission_grpc_status.h"
#include "router/grpc/generate_request.h"

namespace tandem::router {

using tandem::v1::GenerateResponse;

grpc::ServerWriteReactor<grpc::ByteBuffer>* GenerateCall::start(Admission& admission,
                                                                const grpc::ByteBuffer& body,
                                                                grpc::CallbackServerContext* context,
                                                                std::string_view authorization) {
  auto* reactor = new grpc_util::ServerStreamReactor<grpc::ByteBuffer>();
  std::variant<AdmissionSlot, AdmissionError> slot = admission.reserve(authorization);
  if (auto* error = std::get_if<AdmissionError>(&slot)) {
    addRetryAfter(*error, context);
    reactor->writer()->finish(toGrpcStatus(*error));
    return reactor;
  }
  auto call = std::make_shared<GenerateCall>(admission.context(), reactor->writer(),
                                             std::move(std::get<AdmissionSlot>(slot)));
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

GenerateCall::GenerateCall(const CallContext& context, std::shared_ptr<Writer> writer,
                           AdmissionSlot slot)
    : context_(context),
      writer_(std::move(writer)),
      slot_(std::move(slot)),
      metrics_(context.metrics, CallMetrics::Clock::now()) {}

void GenerateCall::submit(Admission& admission, const grpc::ByteBuffer& body) {
  std::lock_guard lock(mu_);
  // the client left (or the server stopped the call) while it waited.
  if (generation_done_ || writer_->closed()) return;
  tandem::v1::GenerateRequest request;
  if (grpc::Status parsed = grpc_util::fromByteBuffer(body, &request); !parsed.ok()) {
    writer_->finish(parsed);
    return;
  }
  GrpcGeneration generation = toGeneration(request, context_.model->name());
  openai::GenerationRequest& parsed = generation.request;
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
  timing_ = metrics_.startChoice();
  auto self = shared_from_this();
  absl::StatusOr<generation::RequestId> id = context_.generator->submit(
      std::move(tokens), std::move(parsed.sampling),
      [self](const generation::TokenOutput& out) { self->onOutput(out); });
  if (!id.ok()) {
    writer_->finish(toGrpcStatus(admission.submitRefused(id.status(), prompt_tokens_)));
    return;
  }
  generator_id_ = *id;
}

GenerateResponse GenerateCall::responseFor(const generation::TokenOutput& output, std::string* finish) {
  GenerateResponse msg;
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
    context_.generator->cancel(*generator_id_);
    *finish = "stop";
    msg.set_stop_reason(text_->matchedStop());
  } else if (output.finished()) {
    // kError never gets here: onOutput ended the call with INTERNAL.
    *finish = std::string(rpc::finishReasonName(output.finish_reason));
    *msg.mutable_text() += text_->finish();
  }
  return msg;
}

void GenerateCall::onOutput(const generation::TokenOutput& output) {
  std::lock_guard lock(mu_);
  if (generation_done_) return;
  if (output.finish_reason == generation::FinishReason::kError) {
    generation_done_ = true;
    writer_->finish(grpc::Status(grpc::StatusCode::INTERNAL, "the model failed while generating"));
    return;
  }
  std::string finish;
  GenerateResponse msg = responseFor(output, &finish);
  if (finish.empty()) {
    writer_->write(grpc_util::toByteBuffer(msg));
    return;
  }
  generation_done_ = true;
  msg.set_finish_reason(finish);
  auto* usage = msg.mutable_usage();
  usage->set_prompt_tokens(prompt_tokens_);
  usage->set_completion_tokens(timing_.tokens);
  usage->set_cached_tokens(output.num_cached_tokens);
  metrics_.completed({{.prompt = prompt_tokens_, .cached = output.num_cached_tokens, .generated = timing_.tokens}});
  writer_->writeLast(grpc_util::toByteBuffer(msg));
}

void GenerateCall::onStreamBroken() {
  std::lock_guard lock(mu_);
  if (generator_id_ && !generation_done_) context_.generator->cancel(*generator_id_);
  generation_done_ = true;
}

void GenerateCall::onStreamDone(const std::optional<grpc::Status>& status) {
  std::lock_guard lock(mu_);
  metrics_.end("grpc_generate", status ? status->error_code() : 1);
}

}  // namespace tandem::router
