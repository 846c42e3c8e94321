#include "router/grpc/generate_reactor.h"

#include <chrono>
#include <variant>

#include "proto/convert/sampling_params_proto.h"
#include "router/generate/call_metrics.h"

namespace tandem::router {

using tandem::v1::GenerateResponse;
using Clock = CallMetrics::Clock;

namespace {

// the gRPC form of an admission failure.
grpc::Status grpcStatus(const AdmissionError& error) {
  grpc::StatusCode code = grpc::StatusCode::INVALID_ARGUMENT;
  switch (error.reason) {
    case AdmissionReason::kUnauthenticated: code = grpc::StatusCode::UNAUTHENTICATED; break;
    case AdmissionReason::kNotReady:
    case AdmissionReason::kDraining: code = grpc::StatusCode::UNAVAILABLE; break;
    case AdmissionReason::kOverloaded: code = grpc::StatusCode::RESOURCE_EXHAUSTED; break;
    case AdmissionReason::kUnknownModel: code = grpc::StatusCode::NOT_FOUND; break;
    case AdmissionReason::kEmptyPrompt:
    case AdmissionReason::kInvalidPrompt:
    case AdmissionReason::kPromptTooLong:
    case AdmissionReason::kContextLengthExceeded:
    case AdmissionReason::kInvalidRequest: code = grpc::StatusCode::INVALID_ARGUMENT; break;
  }
  return grpc::Status(code, error.message);
}

}  // namespace

class GenerateCall : public std::enable_shared_from_this<GenerateCall> {
 public:
  GenerateCall(const CallContext& context, GenerateReactor* reactor)
      : context_(context), reactor_(reactor), metrics_(context.metrics, Clock::now()) {}

  // validates and submits; on error ends the call with it.
  void start(const Admission& admission, const tandem::v1::GenerateRequest& request);
  void onOutput(const generation::TokenOutput& output);
  void onWriteDone(bool ok);
  void onCancel();
  void onDone();

 private:
  // mu_ held.
  void writeNextLocked();
  void finishLocked(const grpc::Status& status);

  const CallContext context_;
  std::mutex mu_;
  GenerateReactor* reactor_;  // null once the call is done
  std::deque<GenerateResponse> queue_;
  bool writing_ = false;
  std::optional<grpc::Status> final_status_;  // set when the last message is queued
  bool finished_ = false;                     // Finish() called
  std::optional<ChoiceTextStream> text_;
  std::optional<generation::RequestId> backend_id_;
  bool generation_done_ = false;
  int prompt_tokens_ = 0;
  CallMetrics metrics_;
  CallMetrics::ChoiceTiming timing_;  // and the completion tokens
};

void GenerateCall::start(const Admission& admission, const tandem::v1::GenerateRequest& request) {
  std::lock_guard lock(mu_);
  // the admission's checks, as the request's fields: no API key, slot or
  // prompt limit here (see InferenceService).
  openai::GenerationRequest parsed;
  parsed.model = request.model();
  openai::Prompt prompt;
  if (request.has_token_ids()) {
    prompt.is_tokens = true;
    prompt.token_ids.assign(request.token_ids().ids().begin(), request.token_ids().ids().end());
  } else if (request.has_text() && !request.text().empty()) {
    prompt.text = request.text();
  } else {
    prompt.is_tokens = true;  // unset or "": no tokens, an empty prompt
  }
  parsed.prompts.push_back(std::move(prompt));
  // invalid params are reported after the model and the prompt.
  absl::StatusOr<generation::SamplingParams> params = rpc::fromProto(request.params());
  if (params.ok()) parsed.sampling = *params;
  parsed.max_tokens_set = request.params().has_max_tokens();
  auto prepared = admission.prepare(parsed);
  if (auto* error = std::get_if<AdmissionError>(&prepared)) {
    finishLocked(grpcStatus(*error));
    return;
  }
  std::vector<int32_t> tokens =
      std::move(std::get<std::vector<TokenizedPrompt>>(prepared).front().tokens);
  if (!params.ok()) {
    finishLocked(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(params.status().message())));
    return;
  }
  const ServedModel& model = *context_.model;
  std::vector<std::string> stop(request.params().stop().begin(), request.params().stop().end());
  text_.emplace(model.tokenizer(), std::move(stop), false, true);
  prompt_tokens_ = static_cast<int>(tokens.size());
  timing_ = metrics_.startChoice();
  auto self = shared_from_this();
  absl::StatusOr<generation::RequestId> id = context_.backend->submit(
      std::move(tokens), std::move(parsed.sampling),
      [self](const generation::TokenOutput& out) { self->onOutput(out); });
  if (!id.ok()) {
    finishLocked(grpcStatus(admission.submitRefused(id.status(), prompt_tokens_)));
    return;
  }
  backend_id_ = *id;
}

void GenerateCall::onOutput(const generation::TokenOutput& output) {
  std::lock_guard lock(mu_);
  if (generation_done_) return;
  if (output.finish_reason == generation::FinishReason::kError) {
    generation_done_ = true;
    finishLocked(grpc::Status(grpc::StatusCode::INTERNAL, "the model failed while generating"));
    return;
  }
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
  std::string finish;
  if (text_->stopped()) {
    context_.backend->cancel(*backend_id_);
    finish = "stop";
    msg.set_stop_reason(text_->matchedStop());
  } else if (output.finished()) {
    finish = output.finish_reason == generation::FinishReason::kLength ? "length"
             : output.finish_reason == generation::FinishReason::kStop ? "stop" : "abort";
    *msg.mutable_text() += text_->finish();
  }
  if (!finish.empty()) {
    generation_done_ = true;
    msg.set_finish_reason(finish);
    auto* usage = msg.mutable_usage();
    usage->set_prompt_tokens(prompt_tokens_);
    usage->set_completion_tokens(timing_.tokens);
    usage->set_cached_tokens(output.num_cached_tokens);
    metrics_.completed(prompt_tokens_, timing_.tokens, output.num_cached_tokens);
  }
  if (reactor_ == nullptr) return;
  queue_.push_back(std::move(msg));
  if (!finish.empty()) final_status_ = grpc::Status::OK;
  writeNextLocked();
}

void GenerateCall::writeNextLocked() {
  if (reactor_ == nullptr || writing_ || finished_) return;
  if (!queue_.empty()) {
    writing_ = true;
    reactor_->StartWrite(&queue_.front());
    return;
  }
  if (final_status_) {
    finished_ = true;
    reactor_->Finish(*final_status_);
  }
}

void GenerateCall::finishLocked(const grpc::Status& status) {
  // queued messages go out first, then the status.
  final_status_ = status;
  writeNextLocked();
}

void GenerateCall::onWriteDone(bool ok) {
  std::lock_guard lock(mu_);
  writing_ = false;
  if (!queue_.empty()) queue_.pop_front();
  if (!ok) {
    // the stream broke: stop generating; OnCancel/OnDone follow.
    if (backend_id_ && !generation_done_) context_.backend->cancel(*backend_id_);
    generation_done_ = true;
    queue_.clear();
    if (!finished_) {
      finished_ = true;
      reactor_->Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the stream was closed"));
    }
    return;
  }
  writeNextLocked();
}

void GenerateCall::onCancel() {
  std::lock_guard lock(mu_);
  if (backend_id_ && !generation_done_) context_.backend->cancel(*backend_id_);
  generation_done_ = true;
  // the message being written must live until its OnWriteDone.
  while (queue_.size() > (writing_ ? 1u : 0u)) queue_.pop_back();
  if (!finished_ && !writing_) {
    finished_ = true;
    reactor_->Finish(grpc::Status::CANCELLED);
  } else if (!finished_) {
    final_status_ = grpc::Status::CANCELLED;
  }
}

void GenerateCall::onDone() {
  std::lock_guard lock(mu_);
  reactor_ = nullptr;
  metrics_.end("grpc_generate", final_status_ ? final_status_->error_code() : 1);
}

GenerateReactor::GenerateReactor(const Admission& admission,
                                 const tandem::v1::GenerateRequest& request)
    : call_(std::make_shared<GenerateCall>(admission.context(), this)) {
  call_->start(admission, request);
}

void GenerateReactor::OnWriteDone(bool ok) { call_->onWriteDone(ok); }
void GenerateReactor::OnCancel() { call_->onCancel(); }
void GenerateReactor::OnDone() {
  call_->onDone();
  delete this;
}

}  // namespace tandem::router
