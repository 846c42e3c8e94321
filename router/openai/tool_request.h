// Reads and checks the tool fields of a chat request: "tools" (function
// tools, OpenAI's chat shape) and "tool_choice" ("none" | "auto" |
// "required" | {"type": "function", "function": {"name": ...}}). Internal
// to tandem_openai: called by parseGenerationRequest, and by the Responses
// request parser with the tools it converted to the chat shape.
#pragma once

#include "nlohmann/json.hpp"
#include "router/openai/json_field.h"
#include "router/openai/tool_choice.h"

namespace tandem::openai {

// most tools one request may offer.
inline constexpr int kMaxTools = 128;

// checks `tools` (a JSON array; null = none): each {"type": "function",
// "function": {"name", "description"?, "parameters"?, "strict"?}} with a
// name of 1 to 64 characters from [a-zA-Z0-9_.-], unique. A problem is
// recorded on `reader` as a 400 with param "tools".
void checkTools(const nlohmann::ordered_json& tools, FieldReader& reader);

// the choice `value` (null/absent = "auto" with tools, "none" without)
// says, given checked `tools`. "required" and a named function need tools;
// a named function must be one of them. Problems: 400 with param
// "tool_choice".
ToolChoice readToolChoice(const nlohmann::ordered_json* value,
                          const nlohmann::ordered_json& tools, FieldReader& reader);

// the "parameters" schema of the tool `name` in checked `tools`, or
// {"type": "object"} when it declares none.
nlohmann::ordered_json toolParameters(const nlohmann::ordered_json& tools,
                                      const std::string& name);

// OpenAI clients send an assistant message's tool_calls[].function.arguments
// as a JSON string; chat templates print them with `tojson` and expect an
// object (HF's convention, which vLLM follows by parsing them): arguments
// that parse as a JSON object are replaced by it, anything else is left.
void parseToolCallArguments(nlohmann::ordered_json& messages);

}  // namespace tandem::openai
