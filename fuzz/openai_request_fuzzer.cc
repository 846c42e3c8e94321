// The bodies of POST /v1/completions and /v1/chat/completions as the router
// handles them (router/openai/openai_request.h, then what ServedModel does
// with an accepted request): parse and validate; a chat request's messages,
// tools and chat_template_kwargs rendered by a real chat template (Qwen3's,
// which reads tools, tool calls and reasoning); the prompt tokenized by the
// embedded model's tokenizer.
// Input: byte 0 bit 0 picks the endpoint (0: completions, 1: chat), the rest
// is the body.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "fuzz/chat_fixtures.h"
#include "router/openai/openai_request.h"

namespace {

using tandem::openai::Endpoint;
using tandem::openai::GenerationRequest;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tandem::fuzz::loadChatFixtures();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const Endpoint endpoint = (data[0] & 1) ? Endpoint::kChatCompletions : Endpoint::kCompletions;
  std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  auto result = tandem::openai::parseGenerationRequest(body, endpoint);
  auto* request = std::get_if<GenerationRequest>(&result);
  if (request == nullptr) return 0;
  if (request->n < 1 || request->n > GenerationRequest::kMaxN) __builtin_trap();
  if (request->prompts.size() > static_cast<size_t>(GenerationRequest::kMaxPrompts)) __builtin_trap();
  if (endpoint == Endpoint::kChatCompletions) {
    auto text = tandem::fuzz::qwen3Template().render(
        request->messages, request->tools,
        request->add_generation_prompt && !request->continue_final_message,
        request->chat_template_kwargs);
    if (text.ok()) tandem::fuzz::storiesTokenizer().encode(*text, /*add_special=*/false);
  } else {
    for (const auto& prompt : request->prompts) {
      if (!prompt.is_tokens) tandem::fuzz::storiesTokenizer().encode(prompt.text, /*add_special=*/true);
    }
  }
  return 0;
}
