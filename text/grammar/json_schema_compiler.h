// JSON Schema -> grammar (tandem's GBNF dialect, grammar_parser.h), for
// response_format json_schema / json_object and forced tool calls.
//
// The grammar generates compact JSON: the only whitespace allowed is one
// optional space after each ':' and ',' (no newlines, no indentation, none
// before the first or after the last byte, so a request ends as soon as
// its value is complete and a budget is not spent on padding). Supported:
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
//
// A schema comes from a stranger, so its size is bounded (InvalidArgument
// naming the limit): schema nesting, $ref chains included (kMaxSchemaDepth),
// the schemas compiled in all (kMaxSchemaNodes), an enum's values
// (kMaxEnumValues) and the JSON nesting of the whole document
// (kMaxSchemaJsonDepth); the grammar it compiles to meets the grammar
// parser's limits (grammar_parser.h) where the caller parses it.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace tandem::grammar {

// schemas nested in schemas (properties, items, anyOf, ..., and each $ref
// followed): the compiler recurses once a level. Real schemas nest under
// ~10 (OpenAI's structured outputs allow 10).
inline constexpr int kMaxSchemaDepth = 64;
// schemas compiled in one document, every property, item and branch
// counted (OpenAI's structured outputs allow 5000 properties in all).
inline constexpr int kMaxSchemaNodes = 16384;
// values of one enum: each is an alternative the matcher carries while the
// values share a prefix (OpenAI's structured outputs allow 1000 in all).
inline constexpr int kMaxEnumValues = 4096;
// JSON nesting of the schema document (const and enum values included,
// which are written out recursively); above the HTTP body's own limit.
inline constexpr int kMaxSchemaJsonDepth = 256;

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
