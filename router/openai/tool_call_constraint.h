// What a forced tool call (tool_choice "required" or a named function) must
// look like in the model's own syntax: the JSON schema of the call object,
// and the literal text the family writes before and after it. The grammar
// compiler (structured outputs) turns the three into the request's grammar,
// so the engine can only sample a well-formed call that the family's
// parser (tool_call_parser.h) reads back.
#pragma once

#include <optional>
#include <string>

#include "nlohmann/json.hpp"
#include "router/openai/tool_call_family.h"
#include "router/openai/tool_choice.h"

namespace tandem::openai {

struct ToolCallConstraint {
  // the call object: {"name": <const name>, "<arguments key>": <the tool's
  // parameters schema>}, both required, no other properties; for
  // "required", an anyOf of one such object per tool. The arguments key is
  // "parameters" for Llama 3, "arguments" otherwise.
  nlohmann::ordered_json schema;
  // literal text before and after the object: "<tool_call>\n" and
  // "\n</tool_call>" (Hermes), "[TOOL_CALLS] [" and "]" (Mistral), none
  // for Llama 3 and plain JSON.
  std::string prefix;
  std::string suffix;
};

// the constraint for `choice` over `tools` (checked, chat shape), or
// nullopt when the choice forces nothing (auto, none).
std::optional<ToolCallConstraint> toolCallConstraint(ToolCallFamily family,
                                                     const nlohmann::ordered_json& tools,
                                                     const ToolChoice& choice);

}  // namespace tandem::openai
