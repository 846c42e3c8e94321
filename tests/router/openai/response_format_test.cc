#include "router/openai/response_format.h"

#include <gtest/gtest.h>

#include <variant>

#include "router/openai/openai_request.h"
#include "text/grammar/grammar_parser.h"
#include "text/grammar/json_schema_compiler.h"

namespace tandem::openai {
namespace {

ParseResult formatChat(const std::string& extra) {
  return parseGenerationRequest(
      R"({"model":"m","messages":[{"role":"user","content":"hi"}],)" + extra + "}",
      Endpoint::kChatCompletions);
}

ApiError errorOf(const ParseResult& r) {
  if (!std::holds_alternative<ApiError>(r)) {
    ADD_FAILURE() << "parsed";
    return {};
  }
  return std::get<ApiError>(r);
}

TEST(ResponseFormatTest, JsonSchemaCompilesIntoTheSamplingGrammar) {
  const char* schema = R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})";
  ParseResult r = formatChat(std::string(R"("response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,"schema":)") +
                       schema + "}}");
  ASSERT_TRUE(std::holds_alternative<GenerationRequest>(r)) << errorOf(r).message;
  EXPECT_EQ(std::get<GenerationRequest>(r).sampling.grammar,
            *grammar::compileJsonSchema(nlohmann::ordered_json::parse(schema)));
  r = parseGenerationRequest(
      std::string(R"({"model":"m","prompt":"x","response_format":{"type":"json_schema","json_schema":{"schema":)") +
          schema + "}}}",
      Endpoint::kCompletions);
  ASSERT_TRUE(std::holds_alternative<GenerationRequest>(r)) << errorOf(r).message;
  EXPECT_FALSE(std::get<GenerationRequest>(r).sampling.grammar.empty());
}

TEST(ResponseFormatTest, JsonObjectTextAndTheGrammarExtension) {
  ParseResult r = formatChat(R"("response_format":{"type":"json_object"})");
  ASSERT_TRUE(std::holds_alternative<GenerationRequest>(r));
  EXPECT_EQ(std::get<GenerationRequest>(r).sampling.grammar, grammar::jsonObjectGrammar());
  r = formatChat(R"("response_format":{"type":"text"})");
  ASSERT_TRUE(std::holds_alternative<GenerationRequest>(r));
  EXPECT_EQ(std::get<GenerationRequest>(r).sampling.grammar, "");
  r = formatChat(R"("grammar":"root ::= \"yes\" | \"no\"")");
  ASSERT_TRUE(std::holds_alternative<GenerationRequest>(r));
  EXPECT_EQ(std::get<GenerationRequest>(r).sampling.grammar, "root ::= \"yes\" | \"no\"");
}

TEST(ResponseFormatTest, ProblemsAre400sNamingTheField) {
  struct Case {
    std::string body;
    std::string param;
    std::string message;
  };
  const Case cases[] = {
      {R"("response_format":{"type":"json_schema","json_schema":{"schema":{"type":"string","pattern":"a+"}}})",
       "response_format.json_schema.schema",
       "JSON schema: keyword 'pattern' at # is not supported"},
      {R"("response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object","properties":{"d":{"type":"string","format":"email"}}}}})",
       "response_format.json_schema.schema",
       "JSON schema: string format 'email' (supported: date, time, date-time, uuid) at "
       "#/properties/d is not supported"},
      {R"("response_format":{"type":"json_schema","json_schema":{"name":"x"}})",
       "response_format.json_schema.schema", "response_format.json_schema.schema is required"},
      {R"("response_format":{"type":"json_schema","json_schema":{"schema":[1]}})",
       "response_format.json_schema.schema",
       "response_format.json_schema.schema must be an object, got array"},
      {R"("response_format":{"type":"json_schema"})", "response_format.json_schema",
       "response_format.json_schema is required for type 'json_schema'"},
      {R"("response_format":{"type":"json_schema","json_schema":{"schema":{},"strict":"yes"}})",
       "response_format.json_schema.strict", "response_format.json_schema.strict must be a boolean, got string"},
      {R"("grammar":"root ::= [a-")", "grammar",
       "grammar syntax error at line 1, column 13: unexpected end of the grammar"},
      {R"("grammar":5)", "grammar", "grammar must be a string, got number"},
      {R"("grammar":"root ::= \"a\"","response_format":{"type":"json_object"})", "grammar",
       "grammar cannot be combined with a response_format of type 'json_object'"},
  };
  for (const Case& c : cases) {
    const ApiError e = errorOf(formatChat(c.body));
    EXPECT_EQ(e.status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body;
    EXPECT_EQ(e.message, c.message) << c.body;
  }
}

TEST(ResponseFormatTest, CompiledSchemasAlwaysParse) {
  EXPECT_TRUE(grammar::parseGrammar(grammarForJsonObject()).ok());
  auto g = grammarForJsonSchema(nlohmann::ordered_json::parse(R"({"type":"array","items":{"enum":["a\"b","\\"]}})"));
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(grammar::parseGrammar(*g).ok());
}

}  // namespace
}  // namespace tandem::openai
