#include "router/generate/responses_call.h"

#include <random>

#include "absl/strings/str_format.h"
#include "router/generate/admission_api_error.h"
#include "router/generate/call_answer.h"
#include "router/openai/api_error.h"

namespace tandem::router {
namespace {

std::string newResponseId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return absl::StrFormat("resp_%016x%016x", rng(), rng());
}

int64_t nowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

ResponsesCall::ResponsesCall(const CallContext& context, AdmissionSlot slot,
                             openai::ResponsesRequest request, std::vector<TokenizedPrompt> prompts,
                             http::ResponseWriterPtr writer, Clock::time_point arrival)
    : OpenAiCall(context, std::move(slot), std::move(request), std::move(prompts), std::move(writer),
                 arrival),
      timing_(metrics_.startChoice()),
      text_(context.model->tokenizer(), request_.chat.stop, request_.chat.include_stop_str_in_output,
            request_.chat.skip_special_tokens,
            request_.chat.parsesToolCalls() ? context.model->toolCallMarkerIds()
                                            : std::vector<int32_t>()),
      tools_(request_.chat.parsesToolCalls()
                 ? openai::makeToolCallParser(context.model->toolCallFamily())
                 : nullptr),
      output_(request_, newResponseId(), nowSeconds(), context.model->name(),
              request_.chat.stream) {}

void ResponsesCall::submit(const Admission& admission) {
  std::lock_guard lock(mu_);
  if (answered_) return;  // the client left before anything started
  auto self = shared_from_this();
  absl::StatusOr<generation::RequestId> id = submitSequence(
      prompts_[0].tokens, request_.chat.sampling,
      [self](const generation::TokenOutput& out) { self->onOutput(out); });
  if (!id.ok()) {
    refuse(toApiError(admission.submitRefused(id.status())));
    return;
  }
  if (request_.chat.stream) {
    writer_->startStream(200, sseHeaders());
    send(output_.start());
  }
}

void ResponsesCall::onOutput(const generation::TokenOutput& output) {
  std::lock_guard lock(mu_);
  if (answered_) return;
  if (output.finish_reason == generation::FinishReason::kError) {
    failGeneration(request_.chat.stream, output_.fail(kModelFailed));
    return;
  }
  std::string delta;
  if (output.token >= 0) {
    metrics_.tokenArrived(timing_);
    cached_tokens_ = output.num_cached_tokens;
    delta = text_.push(output.token);
  }
  bool finished = false;
  bool length = false;
  if (text_.stopped()) {
    // a stop string ended it: the engine may still be generating.
    cancelAll();
    finished = true;
  } else if (output.finished()) {
    finished = true;
    length = output.finish_reason == generation::FinishReason::kLength;
    delta += text_.finish();
  }
  openai::ParsedText parsed;
  if (tools_ != nullptr) {
    parsed = tools_->push(delta);
    if (finished) parsed.append(tools_->finish());
  } else {
    parsed.content = std::move(delta);
  }
  std::string events = output_.add(parsed);
  if (!finished) {
    if (request_.chat.stream && !events.empty()) send(events);
    return;
  }
  answered_ = true;
  const int prompt_tokens = static_cast<int>(prompts_[0].tokens.size());
  metrics_.completed({{.prompt = prompt_tokens, .cached = cached_tokens_, .generated = timing_.tokens}});
  events += output_.finish(length, {prompt_tokens, timing_.tokens, cached_tokens_});
  if (request_.chat.stream) {
    if (send(events)) return;
    metrics_.end(endpoint_, 200);
    writer_->finish();
  } else {
    metrics_.end(endpoint_, 200);
    writer_->respond(200, jsonHeaders(), output_.body());
  }
}

bool ResponsesCall::send(const std::string& events) {
  writer_->write(events);
  return cutOffSlowClient("responses call");
}

}  // namespace tandem::router
