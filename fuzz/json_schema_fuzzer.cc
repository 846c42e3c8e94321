// A request's JSON schema (response_format json_schema, Responses
// text.format, gRPC ResponseFormat.schema, a forced tool call's
// parameters): parsed as the router parses a body (128 levels at most),
// compiled to a grammar with every limit of json_schema_compiler.h, the
// grammar parsed, and walked through its automaton under a token budget
// (grammar_walk.h).
// Input: byte 0 bit 6 wraps the value as a tool call ("<tool_call>\n" ...
// "\n</tool_call>"), its low 6 bits are the budget and the walk's seed;
// the rest is the schema document.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz/grammar_walk.h"
#include "nlohmann/json.hpp"
#include "text/grammar/json_schema_compiler.h"

namespace {

using Json = nlohmann::ordered_json;

// as router/openai/json_field.cc parses a body.
constexpr int kMaxBodyDepth = 128;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tandem::fuzz::storiesVocabulary();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  const Json::parser_callback_t limit = [](int depth, Json::parse_event_t event, Json&) {
    return !((event == Json::parse_event_t::object_start ||
              event == Json::parse_event_t::array_start) &&
             depth >= kMaxBodyDepth);
  };
  const Json schema = Json::parse(body, limit, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return 0;
  tandem::grammar::JsonGrammarOptions options;
  if (data[0] & 64) {
    options.prefix = "<tool_call>\n";
    options.suffix = "\n</tool_call>";
  }
  absl::StatusOr<std::string> text = tandem::grammar::compileJsonSchema(schema, options);
  if (!text.ok()) {
    if (text.status().code() != absl::StatusCode::kInvalidArgument) __builtin_trap();
    return 0;
  }
  tandem::fuzz::walkGrammar(*text, 1 + (data[0] & 63), data[0]);
  return 0;
}
