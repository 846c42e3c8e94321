// Parses POST /v1/responses (OpenAI's Responses API) into the chat request
// it amounts to, so it goes through the same admission, template, tool
// parser and generator as /v1/chat/completions, and keeps what the
// response object echoes back.
//
// Accepted: "input" as a string or a list of items — messages (roles user,
// assistant, system, developer; content a string or input_text /
// output_text parts), function_call and function_call_output items (a tool
// turn sent back); "instructions" (a system message in front);
// "max_output_tokens"; "temperature", "top_p" (and tandem's sampling
// extensions, as on chat); function "tools" in the Responses shape and
// "tool_choice"; "text.format" of type "text", "json_object" or
// "json_schema" (enforced as chat's response_format, and echoed in the
// response); "stream"; "store", "metadata", "user", "parallel_tool_calls",
// "truncation" are accepted. Responses are not stored:
// "previous_response_id", "conversation" and "background" are 400s saying
// so. Errors name the Responses field.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "nlohmann/json.hpp"
#include "router/openai/api_error.h"
#include "router/openai/openai_request.h"

namespace tandem::openai {

struct ResponsesRequest {
  // the chat request: messages, tools (chat shape), tool_choice, sampling
  // (max_output_tokens as max_tokens), stream; n = 1.
  GenerationRequest chat;
  // echoed in the response object as the client sent them (null = absent).
  nlohmann::ordered_json instructions;
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();  // Responses shape
  nlohmann::ordered_json tool_choice = "auto";
  nlohmann::ordered_json metadata = nlohmann::ordered_json::object();
  nlohmann::ordered_json user;
  // "text": {"format": ...} as enforced: {"type": "text"}, {"type":
  // "json_object"}, or {"type": "json_schema"} with the name, schema,
  // strict and description the client sent.
  nlohmann::ordered_json text_format = {{"type", "text"}};
  std::optional<int> max_output_tokens;
  bool store = true;
  bool parallel_tool_calls = true;
};

using ResponsesParseResult = std::variant<ResponsesRequest, ApiError>;

// parses a JSON body. Invalid JSON, a missing "model" or "input", items,
// parts and tools this server does not take, and out-of-range sampling
// values are 400s naming the field ("input", "max_output_tokens", ...).
ResponsesParseResult parseResponsesRequest(std::string_view body);

}  // namespace tandem::openai
