#include "router/grpc/generate_reactor.h"

#include <chrono>

#include "absl/strings/str_format.h"
#include "proto/convert/sampling_params_proto.h"

namespace tandem::router {

using tandem::v1::GenerateResponse;
using Clock = std::chrono::steady_clock;

class GenerateCall : public std::enable_shared_from_this<GenerateCall> {
 public:
  GenerateCall(const JobContext& context, GenerateReactor* reactor)
      : context_(context), reactor_(reactor), arrival_(Clock::now()) {
    context_.metrics->requestStarted();
  }

  // validates and submits; on error ends the call with it.
  void start(const tandem::v1::GenerateRequest& request);
  void onOutput(const generation::TokenOutput& output);
  void onWriteDone(bool ok);
  void onCancel();
  void onDone();

 private:
  // mu_ held.
  void writeNextLocked();
  void finishLocked(const grpc::Status& status);

  const JobContext context_;
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
  int completion_tokens_ = 0;
  Clock::time_point arrival_;
  Clock::time_point last_token_;
};

void GenerateCall::start(const tandem::v1::GenerateRequest& request) {
  std::lock_guard lock(mu_);
  const ServedModel& model = *context_.model;
  if (!request.model().empty() && request.model() != model.name()) {
    finishLocked(grpc::Status(grpc::StatusCode::NOT_FOUND,
                              absl::StrFormat("the model '%s' does not exist; this server serves '%s'",
                                              request.model(), model.name())));
    return;
  }
  std::vector<int32_t> prompt;
  if (request.prompt_case() == tandem::v1::GenerateRequest::PROMPT_NOT_SET ||
      (request.has_text() && request.text().empty())) {
    finishLocked(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the prompt is empty"));
    return;
  }
  if (request.has_token_ids()) {
    prompt.assign(request.token_ids().ids().begin(), request.token_ids().ids().end());
  } else {
    prompt = model.tokenizer().encode(request.text(), /*add_special=*/true);
  }
  if (prompt.empty()) {
    finishLocked(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the prompt is empty"));
    return;
  }
  absl::StatusOr<generation::SamplingParams> params = rpc::fromProto(request.params());
  if (!params.ok()) {
    finishLocked(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(params.status().message())));
    return;
  }
  std::vector<std::string> stop(request.params().stop().begin(), request.params().stop().end());
  text_.emplace(model.tokenizer(), std::move(stop), false, true);
  prompt_tokens_ = static_cast<int>(prompt.size());
  last_token_ = arrival_;
  auto self = shared_from_this();
  absl::StatusOr<generation::RequestId> id = context_.backend->submit(
      std::move(prompt), std::move(*params),
      [self](const generation::TokenOutput& out) { self->onOutput(out); });
  if (!id.ok()) {
    const auto code = absl::IsUnavailable(id.status()) ? grpc::StatusCode::UNAVAILABLE
                                                       : grpc::StatusCode::INVALID_ARGUMENT;
    finishLocked(grpc::Status(code, std::string(id.status().message())));
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
    const Clock::time_point now = Clock::now();
    if (completion_tokens_ == 0) {
      context_.metrics->observeTtft(std::chrono::duration<double>(now - arrival_).count());
    } else {
      context_.metrics->observeInterToken(std::chrono::duration<double>(now - last_token_).count());
    }
    last_token_ = now;
    ++completion_tokens_;
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
    usage->set_completion_tokens(completion_tokens_);
    usage->set_cached_tokens(output.num_cached_tokens);
    context_.metrics->observeE2e(std::chrono::duration<double>(Clock::now() - arrival_).count());
    context_.metrics->addTokens(prompt_tokens_, completion_tokens_, output.num_cached_tokens);
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
  context_.metrics->countRequest("grpc_generate", final_status_ ? final_status_->error_code() : 1);
  context_.metrics->requestEnded();
}

GenerateReactor::GenerateReactor(const JobContext& context,
                                 const tandem::v1::GenerateRequest& request)
    : call_(std::make_shared<GenerateCall>(context, this)) {
  call_->start(request);
}

void GenerateReactor::OnWriteDone(bool ok) { call_->onWriteDone(ok); }
void GenerateReactor::OnCancel() { call_->onCancel(); }
void GenerateReactor::OnDone() {
  call_->onDone();
  delete this;
}

}  // namespace tandem::router
