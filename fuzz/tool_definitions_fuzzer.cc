// The tools of a chat request and what the router builds from them: the
// "tools" and "tool_choice" fields checked by the request parser
// (router/openai/tool_request.h); the tools shown to the model by a real
// chat template (Qwen3's) and the result tokenized; and, for a tool_choice
// that forces a call, the call's constraint in the chosen family's syntax
// (router/openai/tool_call_constraint.h) compiled to a grammar as the
// admission compiles it. A compiled grammar must parse (a grammar over the
// parser's size limits is refused, not a finding).
// Input: byte 0 bits 0-1 pick the tool-call family; the rest is the JSON
// value of "tools", then (after a 0 byte, if any) that of "tool_choice".
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "fuzz/chat_fixtures.h"
#include "router/openai/openai_request.h"
#include "router/openai/tool_call_constraint.h"
#include "router/openai/tool_request.h"
#include "text/grammar/grammar_parser.h"
#include "text/grammar/json_schema_compiler.h"

namespace {

using tandem::openai::GenerationRequest;
using tandem::openai::ToolCallFamily;

constexpr ToolCallFamily kFamilies[] = {ToolCallFamily::kJson, ToolCallFamily::kHermes,
                                        ToolCallFamily::kMistral, ToolCallFamily::kLlama3Json};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tandem::fuzz::loadChatFixtures();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const ToolCallFamily family = kFamilies[data[0] & 3];
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  const size_t split = rest.find('\0');
  std::string body = R"({"model":"m","messages":[{"role":"user","content":"hi"}],"tools":)";
  body += rest.substr(0, split);
  if (split != std::string_view::npos) {
    body += R"(,"tool_choice":)";
    body += rest.substr(split + 1);
  }
  body += "}";
  auto parsed = tandem::openai::parseGenerationRequest(body, tandem::openai::Endpoint::kChatCompletions);
  auto* request = std::get_if<GenerationRequest>(&parsed);
  if (request == nullptr) return 0;
  const size_t max_tools = tandem::openai::kMaxTools;
  if (request->tools.is_array() && request->tools.size() > max_tools) __builtin_trap();
  auto text = tandem::fuzz::qwen3Template().render(request->messages, request->tools,
                                                   /*add_generation_prompt=*/true);
  if (text.ok()) tandem::fuzz::storiesTokenizer().encode(*text, /*add_special=*/false);
  std::optional<tandem::openai::ToolCallConstraint> constraint =
      tandem::openai::toolCallConstraint(family, request->tools, request->tool_choice);
  if (!constraint) return 0;
  absl::StatusOr<std::string> grammar = tandem::grammar::compileJsonSchema(
      constraint->schema, {.prefix = constraint->prefix, .suffix = constraint->suffix});
  if (!grammar.ok()) return 0;
  absl::StatusOr<tandem::grammar::Grammar> checked = tandem::grammar::parseGrammar(*grammar);
  if (!checked.ok() && checked.status().message().find("at most") == std::string_view::npos) {
    __builtin_trap();  // the compiler wrote a grammar its own parser refuses
  }
  return 0;
}
