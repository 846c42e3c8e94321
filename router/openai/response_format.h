// Structured output fields of the chat and completions bodies:
//   "response_format": {"type": "text"}
//                    | {"type": "json_object"}
//                    | {"type": "json_schema", "json_schema": {"name": ..,
//                        "schema": {...}, "strict": bool, "description": ..}}
//   "grammar": "<GBNF text>"   (tandem's extension, text/grammar/grammar_parser.h)
// compiled here, in the router, into SamplingParams::grammar, so that an
// invalid schema, a schema feature tandem cannot enforce or a grammar syntax
// error is a 400 naming it before anything is admitted.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "router/openai/json_field.h"
#include "router/openai/openai_request.h"
#include "text/grammar/json_schema_compiler.h"

namespace tandem::openai {

// reads "response_format" and "grammar" from `reader` into
// request.sampling.grammar (empty for text / absent); a problem is recorded
// on `reader` as a 400 whose param names the field ("response_format.type",
// "response_format.json_schema.schema", "grammar").
void readStructuredOutput(FieldReader& reader, GenerationRequest& request);

// the grammar a JSON-schema response format (or a forced tool call, with
// its prefix and suffix) compiles to, checked by the grammar parser too:
// InvalidArgument naming the unsupported feature or the limit a schema or
// its grammar exceeds, so the engine never meets a grammar it refuses.
absl::StatusOr<std::string> grammarForJsonSchema(const nlohmann::ordered_json& schema,
                                                 const grammar::JsonGrammarOptions& options = {});
// the grammar of any JSON object (json_object).
std::string grammarForJsonObject();
// `text` when it is a valid GBNF grammar (InvalidArgument naming the line
// and column of a syntax error otherwise).
absl::StatusOr<std::string> checkedGrammar(std::string text);

}  // namespace tandem::openai
