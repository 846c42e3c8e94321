#include "router/generate/generation_call.h"

#include "router/generate/call_answer.h"
#include "router/generate/recorded_response_writer.h"

namespace tandem::router {

GenerationCall::GenerationCall(const CallContext& context, AdmissionSlot slot, Clock::time_point arrival,
                               RequestRecordPtr record)
    : context_(context), slot_(std::move(slot)), metrics_(context.metrics, arrival, std::move(record)) {}

absl::StatusOr<generation::RequestId> GenerationCall::submitSequence(
    std::vector<int32_t> prompt, generation::SamplingParams params,
    generation::Generator::OutputCallback on_output) {
  absl::StatusOr<generation::RequestId> id =
      context_.generator->submit(std::move(prompt), std::move(params), std::move(on_output));
  if (id.ok()) submitted_.push_back(*id);
  return id;
}

void GenerationCall::cancelAll() {
  for (generation::RequestId id : submitted_) context_.generator->cancel(id);
}

HttpGenerationCall::HttpGenerationCall(const CallContext& context, AdmissionSlot slot,
                                       std::vector<TokenizedPrompt> prompts, http::ResponseWriterPtr writer,
                                       Clock::time_point arrival, std::string endpoint)
    : GenerationCall(context, std::move(slot), arrival, requestRecordOf(*writer)),
      prompts_(std::move(prompts)),
      writer_(std::move(writer)),
      endpoint_(std::move(endpoint)) {}

void HttpGenerationCall::refuse(const openai::ApiError& error) {
  answered_ = true;
  metrics_.end(endpoint_, error.status);
  respondError(*writer_, error);
}

void HttpGenerationCall::failGeneration(bool streaming, const std::string& stream_tail) {
  answered_ = true;
  cancelAll();
  metrics_.end(endpoint_, 500);
  if (streaming) {
    writer_->write(stream_tail);
    writer_->finish();
  } else {
    writer_->respond(500, jsonHeaders(), openai::errorBody(openai::errorFor(500, kModelFailed)));
  }
}

bool HttpGenerationCall::cutOffSlowClient(const std::string& call) {
  if (!router::cutOffSlowClient(context_, *writer_, metrics_, endpoint_, call, [this] { cancelAll(); })) {
    return false;
  }
  answered_ = true;
  return true;
}

void HttpGenerationCall::clientGone() {
  std::lock_guard lock(mu_);
  if (answered_) return;
  answered_ = true;
  cancelAll();
  metrics_.end(endpoint_, 499);
}

}  // namespace tandem::router
