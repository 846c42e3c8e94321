// Parses and validates the bodies of POST /v1/completions and
// POST /v1/chat/completions into one GenerationRequest, with OpenAI's
// semantics (and the vLLM extensions users rely on: top_k, min_p,
// repetition_penalty, ignore_eos, stop_token_ids, skip_special_tokens,
// include_stop_str_in_output, chat_template_kwargs), logit_bias, on chat the
// tools with tool_choice, and structured output (response_format, tandem's
// `grammar`: router/openai/response_format.h).
//
// Unknown fields are ignored; a known field of the wrong type or out of
// range is a 400 naming the field in `param`. Nothing here tokenizes: prompt
// length limits are checked by the caller once the prompt is tokenized.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "generation/sampling_params.h"
#include "nlohmann/json.hpp"
#include "router/openai/api_error.h"
#include "router/openai/tool_choice.h"

namespace tandem::openai {

enum class Endpoint { kCompletions, kChatCompletions };

// the endpoint's label in metrics and logs: "completions" or "chat".
inline const char* endpointLabel(Endpoint e) {
  return e == Endpoint::kChatCompletions ? "chat" : "completions";
}

// one prompt of a completions request: text, or token ids.
struct Prompt {
  std::string text;
  std::vector<int32_t> token_ids;
  bool is_tokens = false;
};

struct GenerationRequest {
  // limits on what one request may ask for.
  static constexpr int kMaxStopStrings = 32;
  static constexpr int kMaxN = 128;
  static constexpr int kMaxPrompts = 1024;
  // chat messages (and Responses input items): far more than a real
  // conversation holds, and each one is template work before any limit
  // on tokens can apply.
  static constexpr int kMaxMessages = 4096;

  Endpoint endpoint = Endpoint::kCompletions;
  std::string model;

  // completions: one or more prompts ("prompt": string | [string] | [int] |
  // [[int]]); prompt i's choices have indexes i*n .. i*n+n-1.
  std::vector<Prompt> prompts;

  // chat: "messages" as sent (key order kept for the template), "tools"
  // (null when absent), "chat_template_kwargs" (an object, may be empty),
  // add_generation_prompt (default true; false when continue_final_message
  // is true and add_generation_prompt is not sent; both true is a 400),
  // continue_final_message (false).
  nlohmann::ordered_json messages;
  nlohmann::ordered_json tools;
  // "tool_choice"; kNone (and tools left null) when the request has no
  // tools or says "none".
  ToolChoice tool_choice;
  nlohmann::ordered_json chat_template_kwargs = nlohmann::ordered_json::object();
  bool add_generation_prompt = true;
  bool continue_final_message = false;

  // temperature, top_p, top_k, min_p, penalties, seed, ignore_eos,
  // stop_token_ids, max_tokens, logprobs (the number of top logprobs).
  // validate() has passed. max_tokens: "max_completion_tokens" wins over
  // "max_tokens"; when neither is sent, max_tokens_set is false and the
  // caller fills in the default (completions: 16; chat: the rest of the
  // context).
  generation::SamplingParams sampling;
  bool max_tokens_set = false;

  // "stop": a string or up to kMaxStopStrings strings (empty ones dropped).
  std::vector<std::string> stop;
  int n = 1;

  // completions: "logprobs": int 0..5 (we allow up to 20) -> want_logprobs,
  //   top_logprobs = that int.
  // chat: "logprobs": bool, "top_logprobs": int 0..20 (needs logprobs=true).
  bool want_logprobs = false;
  int top_logprobs = 0;

  // completions only: "echo" prepends the prompt to the text (non-streaming
  // and streaming); with "logprobs" the prompt's tokens lead the logprobs
  // (the first with null logprob and top_logprobs, as OpenAI's legacy API
  // and vLLM). "max_tokens": 0 needs echo: the prompt is scored and
  // nothing generated (score_only: the generator is asked for one token,
  // which is dropped, as vLLM does; finish_reason "length"). "suffix" is
  // rejected (400) when non-empty.
  bool echo = false;
  bool score_only = false;
  // vLLM's "prompt_logprobs": n (0..20): each choice's (chat: the
  // response's) "prompt_logprobs", the prompt's tokens with their logprob,
  // rank and the n most likely tokens at each position. Not with stream.
  std::optional<int> prompt_logprobs;

  bool stream = false;
  // "stream_options": {"include_usage": bool} (only valid with stream).
  bool include_usage = false;
  std::string user;
  bool skip_special_tokens = true;
  bool include_stop_str_in_output = false;

  // a chat request whose output is parsed for tool calls: it offers tools
  // and tool_choice is not "none".
  bool parsesToolCalls() const {
    return endpoint == Endpoint::kChatCompletions && tool_choice.parsesCalls() &&
           tools.is_array() && !tools.empty();
  }
};

// the request, or the error to answer with (status 400 with param set).
using ParseResult = std::variant<GenerationRequest, openai::ApiError>;

// parses a JSON body. Invalid JSON, a body that is not an object, missing
// "model"/"prompt"/"messages", wrong types and out-of-range values are 400s.
ParseResult parseGenerationRequest(std::string_view body, Endpoint endpoint);

}  // namespace tandem::openai
