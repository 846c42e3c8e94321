// JSON Schema -> grammar (tandem's GBNF dialect, grammar_parser.h), for
// response_format json_schema / json_object and forced tool calls.
//
// The grammar generates compact JSON with optional whitespace between
// tokens (none before the first or after the last byte, so a request ends
// as soon as its value is complete). Supported:
//   type (one or a list): object, array, string, number, integer, boolean,
//     null; an empty schema (or true) is any JSON value;
//   object: properties (generated in the schema's order; a property not in
//     `required` may be left out), required, additionalProperties (false,
//     true or a schema; absent = false: only the listed properties, unless
//     there are no properties: {"type": "object"} is any object);
//   array: items, prefixItems, minItems, maxItems;
//   string: minLength, maxLength, format date | time | date-time | uuid;
//   integer: minimum, maximum, exclusiveMinimum, exclusiveMaximum (any
//     integers within +-10^15);
//   number: minimum, maximum with integer values;
//   enum, const (any JSON values), anyOf, oneOf (as anyOf), allOf of one
//     schema, $ref to "#", "#/$defs/..." or "#/definitions/..." (recursion
//     allowed), and the annotations title, description, default, examples,
//     $schema, $id, $comment, deprecated, readOnly, writeOnly.
// Anything else (pattern, multipleOf, uniqueItems, minProperties, other
// formats, remote $refs, ...) is refused: InvalidArgument naming the
// keyword and where it is ("pattern at #/properties/zip is not supported").
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace tandem::grammar {

struct JsonGrammarOptions {
  // literal text the output starts with, before the JSON value (e.g.
  // "<tool_call>\n" for a forced tool call).
  std::string prefix;
  // literal text after the JSON value (e.g. "\n</tool_call>").
  std::string suffix;
};

// the grammar of JSON values valid under `schema` (an object or a boolean),
// wrapped in options.prefix / options.suffix.
absl::StatusOr<std::string> compileJsonSchema(const nlohmann::ordered_json& schema,
                                              const JsonGrammarOptions& options = {});

// the grammar of any JSON object (response_format json_object).
std::string jsonObjectGrammar(const JsonGrammarOptions& options = {});

// `bytes` as a GBNF string literal, quotes included ("a\"b\n").
std::string gbnfLiteral(std::string_view bytes);

}  // namespace tandem::grammar
