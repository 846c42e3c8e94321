// The body of POST /v1/responses as the router handles it
// (router/openai/responses_request.h): its input items (messages, content
// parts, function_call and function_call_output turns), instructions, tools
// and text.format turned into a chat request, which a real chat template
// (Qwen3's, which reads tool calls and tool results) renders and the
// embedded model's tokenizer tokenizes. An accepted request holds at most
// kMaxMessages items (and the instructions' system message) and n = 1.
// Input: the body.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <variant>

#include "fuzz/chat_fixtures.h"
#include "router/openai/responses_request.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tandem::fuzz::loadChatFixtures();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tandem::openai::GenerationRequest;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  auto parsed = tandem::openai::parseResponsesRequest(body);
  auto* request = std::get_if<tandem::openai::ResponsesRequest>(&parsed);
  if (request == nullptr) return 0;
  const GenerationRequest& chat = request->chat;
  if (!chat.messages.is_array() || chat.messages.empty() ||
      chat.messages.size() > static_cast<size_t>(GenerationRequest::kMaxMessages) || chat.n != 1) {
    __builtin_trap();
  }
  auto text = tandem::fuzz::qwen3Template().render(chat.messages, chat.tools,
                                                   /*add_generation_prompt=*/true,
                                                   chat.chat_template_kwargs);
  if (text.ok()) tandem::fuzz::storiesTokenizer().encode(*text, /*add_special=*/false);
  return 0;
}
