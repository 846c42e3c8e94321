// How a model writes tool calls, told from its chat template: the template
// that renders an assistant's tool_calls in a syntax is the syntax the
// model was trained to emit. Chooses the tool-call parser and the framing
// of a forced call.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tandem::openai {

enum class ToolCallFamily {
  // no known syntax in the template (base models, the plain template): a
  // bare JSON object {"name": ..., "arguments": ...} (or "parameters").
  kJson,
  // Llama 3.1+: {"name": ..., "parameters": {...}}, possibly after
  // <|python_tag|>, several separated by ';'.
  kLlama3Json,
  // Hermes / Qwen 2.5+ / Qwen3: <tool_call>{"name": ..., "arguments": {...}}</tool_call>.
  kHermes,
  // Mistral (v0.3 template): [TOOL_CALLS] [{"name": ..., "arguments": {...}}, ...].
  kMistral,
};

// the family whose syntax `chat_template` (the template's source text) renders.
ToolCallFamily detectToolCallFamily(std::string_view chat_template);

// "json", "llama3_json", "hermes", "mistral" (vLLM's parser names).
const char* toolCallFamilyName(ToolCallFamily family);

// the special tokens (their text) that open the family's tool calls: a
// front end must keep them in the text it parses even when it skips
// special tokens (<|python_tag|>, [TOOL_CALLS]).
std::vector<std::string> toolCallMarkerTokens(ToolCallFamily family);

}  // namespace tandem::openai
