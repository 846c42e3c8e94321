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

#include "common/mapped_file.h"
#include "router/openai/openai_request.h"
#include "text/chat/chat_template.h"
#include "text/tokenizer/tokenizer.h"

namespace {

using tandem::openai::Endpoint;
using tandem::openai::GenerationRequest;

const tandem::chat::ChatTemplate* chatTemplate() {
  static const tandem::chat::ChatTemplatePtr t = [] {
    auto source = tandem::readFile(TANDEM_FUZZ_DIR "/corpus/chat_template/qwen3.jinja");
    if (!source.ok()) __builtin_trap();
    auto parsed = tandem::chat::ChatTemplate::parse(*source);
    if (!parsed.ok()) __builtin_trap();
    (*parsed)->setSpecialTokens("", "<|im_end|>");
    return std::move(*parsed);
  }();
  return t.get();
}

const tandem::tokenizer::Tokenizer* tokenizer() {
  static const tandem::tokenizer::TokenizerPtr t = [] {
    auto loaded = tandem::tokenizer::Tokenizer::fromHfDir(TANDEM_SOURCE_DIR "/models/stories260K/hf");
    if (!loaded.ok()) __builtin_trap();
    return std::move(*loaded);
  }();
  return t.get();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  chatTemplate();
  tokenizer();
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
    auto text = chatTemplate()->render(request->messages, request->tools,
                                       request->add_generation_prompt && !request->continue_final_message,
                                       request->chat_template_kwargs);
    if (text.ok()) tokenizer()->encode(*text, /*add_special=*/false);
  } else {
    for (const auto& prompt : request->prompts) {
      if (!prompt.is_tokens) tokenizer()->encode(prompt.text, /*add_special=*/true);
    }
  }
  return 0;
}
