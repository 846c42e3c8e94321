// A chat template as it comes with a model (tokenizer_config.json's
// chat_template, a GGUF's tokenizer.chat_template, --chat-template): parsed
// by text/chat (lexer, parser) and rendered by its Jinja interpreter for a
// conversation with a system prompt, tool definitions, an assistant tool
// call and its result, with and without the generation prompt. The
// interpreter's budgets (operations, output bytes, recursion) bound every
// render.
// Input: the template source.
#include <cstddef>
#include <cstdint>
#include <string>

#include "nlohmann/json.hpp"
#include "text/chat/chat_template.h"

namespace {

const nlohmann::ordered_json& messages() {
  static const nlohmann::ordered_json m = nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "What is the weather in Paris? <|im_end|>"},
    {"role": "assistant", "content": null, "reasoning_content": "look it up",
     "tool_calls": [{"type": "function", "id": "call_1",
                     "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 21}"},
    {"role": "assistant", "content": "It is 21 °C. 你好 🙂"},
    {"role": "user", "content": [{"type": "text", "text": "Thanks!"}]}
  ])");
  return m;
}

const nlohmann::ordered_json& tools() {
  static const nlohmann::ordered_json t = nlohmann::ordered_json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Weather",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                    "required": ["city"]}}}
  ])");
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string source(reinterpret_cast<const char*>(data), size);
  auto t = tandem::chat::ChatTemplate::parse(source);
  if (!t.ok()) return 0;
  (*t)->setSpecialTokens("<s>", "</s>");
  const nlohmann::ordered_json extra = {{"enable_thinking", false}};
  (void)(*t)->render(messages(), tools(), /*add_generation_prompt=*/true, extra);
  (void)(*t)->render(messages(), nlohmann::ordered_json(), /*add_generation_prompt=*/false);
  return 0;
}
