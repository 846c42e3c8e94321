// One OpenAI completions or chat request in flight, admitted already (see
// Admission): its choices (n per prompt) generating on the generator, their
// text streams (UTF-8, stop strings), and the answer — SSE chunks as tokens
// arrive, or one JSON body when all choices finished. A client that goes
// away cancels every choice; a choice the generator refuses fails the whole
// request with a plain 4xx/503, even when it asked to stream.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "router/generate/choice_text_stream.h"
#include "router/generate/generation_call.h"
#include "router/openai/openai_response.h"

namespace tandem::router {

// start(): OpenAiCall's; n choices per prompt, all refused when one is.
class CompletionCall final : public OpenAiCall<CompletionCall, openai::GenerationRequest> {
 private:
  friend OpenAiCall;

  struct Choice {
    Choice(const ServedModel& model, const openai::GenerationRequest& r)
        : text(model.tokenizer(), r.stop, r.include_stop_str_in_output, r.skip_special_tokens,
               r.parsesToolCalls() ? model.toolCallMarkerIds() : std::vector<int32_t>()) {
      if (r.parsesToolCalls()) tools = openai::makeToolCallParser(model.toolCallFamily());
    }
    int index = 0;
    int prompt_index = 0;
    generation::RequestId generator_id = 0;
    ChoiceTextStream text;
    openai::ToolCallParserPtr tools;  // chat with tools: the text's tool calls
    openai::ChoiceResult result;  // whole text and logprobs (non-streaming)
    CallMetrics::ChoiceTiming timing;  // and its completion tokens
    int cached_tokens = 0;
    int prompt_tokens = 0;
    bool done = false;
    bool sent_first = false;
    // the first token arrived (with the prompt's scores).
    bool got_token = false;
    // echo with logprobs: the prompt's tokens lead the logprobs.
    bool prompt_scored = false;
    size_t sent_bytes = 0;  // text sent in earlier chunks (streaming)
  };

  CompletionCall(const CallContext& context, AdmissionSlot slot,
                 openai::GenerationRequest request, std::vector<TokenizedPrompt> prompts,
                 http::ResponseWriterPtr writer, Clock::time_point arrival);

  static std::string endpointOf(const openai::GenerationRequest& request) {
    return openai::endpointLabel(request.endpoint);
  }
  // submits every choice (a choice refused refuses the call).
  void submit(const Admission& admission);
  // generator thread: one output of choice `c`.
  void onOutput(int c, const generation::TokenOutput& output);
  void appendToken(Choice& choice, const generation::TokenOutput& output, std::string& delta,
                   std::vector<openai::TokenLogprobEntry>& logprobs);
  // the first output's prompt scores: the echoed prompt's logprob entries
  // (into `logprobs`) and vLLM's prompt_logprobs (into the choice's result).
  void addPromptScores(Choice& choice, const generation::TokenOutput& output,
                       std::vector<openai::TokenLogprobEntry>& logprobs);
  void sendDelta(Choice& choice, std::string delta,
                 std::vector<openai::TokenLogprobEntry> logprobs, const std::string& finish,
                 std::vector<openai::ToolCallDelta> calls);
  void complete();
  // per prompt, its tokens (mu_ held, every choice done).
  std::vector<CallMetrics::PromptTokens> promptTokens() const;
  static openai::Usage usage(const std::vector<CallMetrics::PromptTokens>& prompts);

  openai::ResponseMeta meta_;

  std::vector<std::unique_ptr<Choice>> choices_;  // guarded by mu_
  int num_done_ = 0;                              // guarded by mu_
};

}  // namespace tandem::router
