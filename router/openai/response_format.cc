#include "router/openai/response_format.h"

#include "absl/strings/str_cat.h"
#include "text/grammar/grammar_parser.h"
#include "text/grammar/json_schema_compiler.h"

namespace tandem::openai {

absl::StatusOr<std::string> checkedGrammar(std::string text) {
  absl::StatusOr<grammar::Grammar> parsed = grammar::parseGrammar(text);
  if (!parsed.ok()) return parsed.status();
  return text;
}

absl::StatusOr<std::string> grammarForJsonSchema(const nlohmann::ordered_json& schema,
                                                 const grammar::JsonGrammarOptions& options) {
  absl::StatusOr<std::string> text = grammar::compileJsonSchema(schema, options);
  if (!text.ok()) return text.status();
  // the compiler's output always parses; a schema that expands past the
  // grammar's size limits is refused here.
  return checkedGrammar(std::move(*text));
}

std::string grammarForJsonObject() { return grammar::jsonObjectGrammar(); }

void readStructuredOutput(FieldReader& reader, GenerationRequest& request) {
  std::string& out = request.sampling.grammar;
  if (std::optional<std::string> text = reader.readString("grammar"); text && !text->empty()) {
    absl::StatusOr<std::string> checked = checkedGrammar(std::move(*text));
    if (!checked.ok()) {
      reader.fail("grammar", std::string(checked.status().message()));
      return;
    }
    out = std::move(*checked);
  }
  const nlohmann::ordered_json* format = reader.readObject("response_format");
  if (format == nullptr) return;
  FieldReader nested(*format, "response_format.");
  const std::optional<std::string> type = nested.readString("type");
  if (!nested.failed() && !type) nested.fail("type", "response_format.type is required");
  if (nested.failed() || *type == "text") {
    reader.absorb(nested);
    return;
  }
  if (!out.empty()) {
    reader.fail("grammar", "grammar cannot be combined with a response_format of type '" +
                               *type + "'");
    return;
  }
  if (*type == "json_object") {
    out = grammarForJsonObject();
    return;
  }
  if (*type != "json_schema") {
    nested.fail("type", absl::StrCat("response_format.type must be 'text', 'json_object' or "
                                     "'json_schema', got '", *type, "'"));
    reader.absorb(nested);
    return;
  }
  const nlohmann::ordered_json* spec = nested.readObject("json_schema");
  if (!nested.failed() && spec == nullptr) {
    nested.fail("json_schema", "response_format.json_schema is required for type 'json_schema'");
  }
  if (nested.failed()) {
    reader.absorb(nested);
    return;
  }
  FieldReader fields(*spec, "response_format.json_schema.");
  (void)fields.readString("name");
  (void)fields.readString("description");
  (void)fields.readBool("strict");  // every schema is enforced, strict or not.
  const nlohmann::ordered_json* schema = fields.find("schema");
  if (!fields.failed() && schema == nullptr) {
    fields.fail("schema", "response_format.json_schema.schema is required");
  } else if (!fields.failed() && !schema->is_object() && !schema->is_boolean()) {
    fields.fail("schema", absl::StrCat("response_format.json_schema.schema must be an object, got ",
                                       schema->type_name()));
  } else if (!fields.failed()) {
    absl::StatusOr<std::string> compiled = grammarForJsonSchema(*schema);
    if (compiled.ok()) {
      out = std::move(*compiled);
    } else {
      fields.fail("schema", std::string(compiled.status().message()));
    }
  }
  nested.absorb(fields);
  reader.absorb(nested);
}

}  // namespace tandem::openai
