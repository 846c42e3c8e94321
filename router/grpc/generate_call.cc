#include "router/grpc/generate_call.h"

#include "absl/strings/str_format.h"
#include "common/grpc/status_mapping.h"
#include "proto/convert/finish_reason_proto.h"
#include "proto/convert/sampling_params_proto.h"

namespace tandem::router {

using tandem::v1::GenerateResponse;

grpc::ServerWriteReactor<GenerateResponse>* GenerateCall::start(
    const JobContext& context, const tandem::v1::GenerateRequest& request) {
  auto* reactor = new grpc_util::ServerStreamReactor<GenerateResponse>();
  auto call = std::make_shared<GenerateCall>(context, reactor->writer());
  reactor->observe(call);
  call->submit(request);
  return reactor;
}

GenerateCall::GenerateCall(const JobContext& context, std::shared_ptr<Writer> writer)
    : context_(context), writer_(std::move(writer)), arrival_(Clock::now()) {
  context_.metrics->requestStarted();
}

void GenerateCall::submit(const tandem::v1::GenerateRequest& request) {
  std::lock_guard lock(mu_);
  const ServedModel& model = *context_.model;
  if (!request.model().empty() && request.model() != model.name()) {
    writer_->finish(grpc::Status(grpc::StatusCode::NOT_FOUND,
                                 absl::StrFormat("the model '%s' does not exist; this server serves '%s'",
                                                 request.model(), model.name())));
    return;
  }
  std::vector<int32_t> prompt;
  if (request.prompt_case() == tandem::v1::GenerateRequest::PROMPT_NOT_SET ||
      (request.has_text() && request.text().empty())) {
    writer_->finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the prompt is empty"));
    return;
  }
  if (request.has_token_ids()) {
    prompt.assign(request.token_ids().ids().begin(), request.token_ids().ids().end());
  } else {
    prompt = model.tokenizer().encode(request.text(), /*add_special=*/true);
  }
  if (prompt.empty()) {
    writer_->finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the prompt is empty"));
    return;
  }
  absl::StatusOr<generation::SamplingParams> params = rpc::fromProto(request.params());
  if (!params.ok()) {
    // fromProto fails with InvalidArgument only.
    writer_->finish(grpc_util::toGrpcStatus(params.status()));
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
    writer_->finish(grpc_util::refusalToGrpc(id.status()));
    return;
  }
  backend_id_ = *id;
}

GenerateResponse GenerateCall::responseFor(const generation::TokenOutput& output, std::string* finish) {
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
  if (text_->stopped()) {
    context_.backend->cancel(*backend_id_);
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
    writer_->write(std::move(msg));
    return;
  }
  generation_done_ = true;
  msg.set_finish_reason(finish);
  auto* usage = msg.mutable_usage();
  usage->set_prompt_tokens(prompt_tokens_);
  usage->set_completion_tokens(completion_tokens_);
  usage->set_cached_tokens(output.num_cached_tokens);
  context_.metrics->observeE2e(std::chrono::duration<double>(Clock::now() - arrival_).count());
  context_.metrics->addTokens(prompt_tokens_, completion_tokens_, output.num_cached_tokens);
  writer_->writeLast(std::move(msg));
}

void GenerateCall::onStreamBroken() {
  std::lock_guard lock(mu_);
  if (backend_id_ && !generation_done_) context_.backend->cancel(*backend_id_);
  generation_done_ = true;
}

void GenerateCall::onStreamDone(const std::optional<grpc::Status>& status) {
  context_.metrics->countRequest("grpc_generate", status ? status->error_code() : 1);
  context_.metrics->requestEnded();
}

}  // namespace tandem::router
