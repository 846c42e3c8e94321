// One POST /v1/responses call in flight, admitted already (see Admission):
// its one sequence generating on the generator, its text stream (UTF-8,
// stop strings) and tool-call parser, and the answer — the typed SSE
// events of the Responses API as text arrives, or the response object when
// it finished (ResponsesOutput renders both). Like CompletionCall: a client
// that goes away cancels the sequence, a refusal is a plain 4xx/503 even
// when streaming, and a streaming client that stops reading is cut off.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "router/generate/choice_text_stream.h"
#include "router/generate/generation_call.h"
#include "router/openai/responses_output.h"
#include "router/openai/responses_request.h"
#include "router/openai/tool_call_parser.h"

namespace tandem::router {

// start(): OpenAiCall's; the request's one prompt is prepared by the
// admission from request.chat.
class ResponsesCall final : public OpenAiCall<ResponsesCall, openai::ResponsesRequest> {
 private:
  friend OpenAiCall;

  ResponsesCall(const CallContext& context, AdmissionSlot slot, openai::ResponsesRequest request,
                std::vector<TokenizedPrompt> prompts, http::ResponseWriterPtr writer,
                Clock::time_point arrival);

  static std::string endpointOf(const openai::ResponsesRequest&) { return "responses"; }
  void submit(const Admission& admission);
  // generator thread: one output.
  void onOutput(const generation::TokenOutput& output);
  // streaming, mu_ held: writes `events`; true when the client was cut off.
  bool send(const std::string& events);


  CallMetrics::ChoiceTiming timing_;    // guarded by mu_
  ChoiceTextStream text_;               // guarded by mu_
  openai::ToolCallParserPtr tools_;     // guarded by mu_; null without tools
  openai::ResponsesOutput output_;      // guarded by mu_
  int cached_tokens_ = 0;               // guarded by mu_
};

}  // namespace tandem::router
