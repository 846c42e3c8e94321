// tools and tool_choice on a chat request, and the forced-call constraint:
// what is accepted, each 400 with its param, and what each choice means
// for the template (tools shown or not) and the parser.
#include "router/openai/tool_request.h"

#include <gtest/gtest.h>

#include <string>

#include "router/openai/openai_request.h"
#include "router/openai/response_format.h"
#include "router/openai/tool_call_constraint.h"
#include "router/openai/tool_call_parser.h"
#include "tests/text/grammar/grammar_test_util.h"

namespace tandem::openai {
namespace {

using Json = nlohmann::ordered_json;

constexpr char kTools[] =
    R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",)"
    R"("properties":{"city":{"type":"string"}},"required":["city"]}}},)"
    R"({"type":"function","function":{"name":"get_time"}}])";

std::string chatWith(const std::string& fields) {
  return R"({"model":"m","messages":[{"role":"user","content":"hi"}],)" + fields + "}";
}

ParseResult parse(const std::string& fields) {
  return parseGenerationRequest(chatWith(fields), Endpoint::kChatCompletions);
}

GenerationRequest parseOk(const std::string& fields) {
  ParseResult result = parse(fields);
  if (auto* error = std::get_if<ApiError>(&result)) {
    ADD_FAILURE() << error->message;
    return {};
  }
  return std::get<GenerationRequest>(std::move(result));
}

ApiError parseError(const std::string& fields) {
  ParseResult result = parse(fields);
  if (!std::holds_alternative<ApiError>(result)) {
    ADD_FAILURE() << "accepted " << fields;
    return {};
  }
  return std::get<ApiError>(result);
}

TEST(ToolRequestTest, ToolsMeanAutoAndNoToolsMeanNone) {
  GenerationRequest with = parseOk(std::string(R"("tools":)") + kTools);
  EXPECT_EQ(with.tool_choice.mode, ToolChoiceMode::kAuto);
  EXPECT_TRUE(with.parsesToolCalls());
  EXPECT_EQ(with.tools.size(), 2u);
  GenerationRequest without = parseOk(R"("tool_choice":"auto")");
  EXPECT_EQ(without.tool_choice.mode, ToolChoiceMode::kNone);
  EXPECT_FALSE(without.parsesToolCalls());
}

TEST(ToolRequestTest, NoneHidesTheToolsFromTheTemplateAndTheParser) {
  GenerationRequest none = parseOk(std::string(R"("tools":)") + kTools + R"(,"tool_choice":"none")");
  EXPECT_EQ(none.tool_choice.mode, ToolChoiceMode::kNone);
  EXPECT_TRUE(none.tools.is_null());
  EXPECT_FALSE(none.parsesToolCalls());
}

TEST(ToolRequestTest, RequiredAndANamedFunctionAreReadAndParsed) {
  GenerationRequest required =
      parseOk(std::string(R"("tools":)") + kTools + R"(,"tool_choice":"required")");
  EXPECT_EQ(required.tool_choice.mode, ToolChoiceMode::kRequired);
  EXPECT_TRUE(required.parsesToolCalls());
  GenerationRequest named = parseOk(std::string(R"("tools":)") + kTools +
                                    R"(,"tool_choice":{"type":"function","function":{"name":"get_time"}})");
  EXPECT_EQ(named.tool_choice.mode, ToolChoiceMode::kNamed);
  EXPECT_EQ(named.tool_choice.name, "get_time");
}

TEST(ToolRequestTest, RefusesBadToolsAndChoicesNamingTheProblem) {
  struct Case {
    std::string fields, param, message;
  };
  const std::string tools = std::string(R"("tools":)") + kTools;
  for (const Case& c : std::vector<Case>{
           {R"("tools":{})", "tools", "tools must be an array, got object"},
           {R"("tools":[1])", "tools", "tools[0] must be an object"},
           {R"("tools":[{"type":"code_interpreter"}])", "tools",
            "tools[0]: tools of type 'code_interpreter' are not supported, only 'function'"},
           {R"("tools":[{"type":"function"}])", "tools", "tools[0].function must be an object"},
           {R"("tools":[{"type":"function","function":{"name":"a b"}}])", "tools",
            "tools[0].function.name must be 1 to 64 characters"},
           {R"("tools":[{"type":"function","function":{"name":"f","parameters":[]}}])", "tools",
            "tools[0].function.parameters must be a JSON schema object"},
           {R"("tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}])",
            "tools", "tools[1]: the function name 'f' is used twice"},
           {R"("tool_choice":"required")", "tool_choice",
            "tool_choice \"required\" needs tools, and the request has none"},
           {R"("tool_choice":{"type":"function","function":{"name":"f"}})", "tool_choice",
            "tool_choice naming 'f' needs tools"},
           {tools + R"(,"tool_choice":{"type":"function","function":{"name":"nope"}})", "tool_choice",
            "tool_choice names the function 'nope', which is not among the tools"},
           {tools + R"(,"tool_choice":"always")", "tool_choice",
            "tool_choice must be \"none\", \"auto\", \"required\" or a function, got \"always\""},
           {tools + R"(,"tool_choice":{"type":"function"})", "tool_choice",
            "tool_choice as an object must be"},
           {tools + R"(,"tool_choice":3)", "tool_choice", "tool_choice must be a string or an object"},
       }) {
    ApiError error = parseError(c.fields);
    EXPECT_EQ(error.status, 400) << c.fields;
    EXPECT_EQ(error.param, c.param) << c.fields;
    EXPECT_NE(error.message.find(c.message), std::string::npos)
        << c.fields << "\n got: " << error.message;
  }
}

TEST(ToolRequestTest, AssistantCallArgumentsSentAsJsonTextReachTheTemplateAsObjects) {
  ParseResult result = parseGenerationRequest(
      R"({"model":"m","messages":[{"role":"user","content":"hi"},)"
      R"({"role":"assistant","content":null,"tool_calls":[)"
      R"({"id":"c1","type":"function","function":{"name":"f","arguments":"{\"b\":1,\"a\":2}"}},)"
      R"({"id":"c2","type":"function","function":{"name":"g","arguments":"not json"}}]},)"
      R"({"role":"tool","tool_call_id":"c1","content":"3"}]})",
      Endpoint::kChatCompletions);
  ASSERT_TRUE(std::holds_alternative<GenerationRequest>(result));
  const Json& calls = std::get<GenerationRequest>(result).messages[1]["tool_calls"];
  EXPECT_EQ(calls[0]["function"]["arguments"].dump(), R"({"b":1,"a":2})");
  EXPECT_EQ(calls[1]["function"]["arguments"], "not json");
}

// a forced call, written as the constraint says (prefix, an instance of the
// schema, suffix), reads back through the family's parser as that call.
TEST(ToolCallConstraintTest, AForcedCallInTheFamilysFramingParsesBackAsTheCall) {
  const Json tools = Json::parse(kTools);
  const ToolChoice named{ToolChoiceMode::kNamed, "get_weather"};
  struct Case {
    ToolCallFamily family;
    std::string arguments_key, prefix, suffix;
  };
  for (const Case& c : std::vector<Case>{
           {ToolCallFamily::kLlama3Json, "parameters", "", ""},
           {ToolCallFamily::kHermes, "arguments", "<tool_call>\n", "\n</tool_call>"},
           {ToolCallFamily::kMistral, "arguments", "[TOOL_CALLS] [", "]"},
           {ToolCallFamily::kJson, "arguments", "", ""},
       }) {
    std::optional<ToolCallConstraint> constraint = toolCallConstraint(c.family, tools, named);
    ASSERT_TRUE(constraint.has_value());
    EXPECT_EQ(constraint->prefix, c.prefix);
    EXPECT_EQ(constraint->suffix, c.suffix);
    const Json& schema = constraint->schema;
    EXPECT_EQ(schema["properties"]["name"], Json({{"const", "get_weather"}}));
    EXPECT_EQ(schema["properties"][c.arguments_key], tools[0]["function"]["parameters"]);
    EXPECT_EQ(schema["required"], Json::array({"name", c.arguments_key}));
    EXPECT_EQ(schema["additionalProperties"], false);

    const Json instance = {{"name", "get_weather"}, {c.arguments_key, {{"city", "Oslo"}}}};
    ToolCallParserPtr parser = makeToolCallParser(c.family);
    ParsedText parsed = parser->push(constraint->prefix + instance.dump() + constraint->suffix);
    parsed.append(parser->finish());
    std::vector<ToolCall> calls;
    accumulateToolCalls(parsed.calls, calls);
    ASSERT_EQ(calls.size(), 1u) << toolCallFamilyName(c.family);
    EXPECT_EQ(calls[0].name, "get_weather");
    EXPECT_EQ(calls[0].arguments, R"({"city":"Oslo"})");
    EXPECT_EQ(parsed.content, "");
  }
}

TEST(ToolCallConstraintTest, RequiredIsAnyOfTheToolsAndAutoForcesNothing) {
  const Json tools = Json::parse(kTools);
  std::optional<ToolCallConstraint> required =
      toolCallConstraint(ToolCallFamily::kHermes, tools, {ToolChoiceMode::kRequired, ""});
  ASSERT_TRUE(required.has_value());
  ASSERT_EQ(required->schema["anyOf"].size(), 2u);
  EXPECT_EQ(required->schema["anyOf"][0]["properties"]["name"]["const"], "get_weather");
  EXPECT_EQ(required->schema["anyOf"][1]["properties"]["name"]["const"], "get_time");
  // a tool without parameters takes any object
  EXPECT_EQ(required->schema["anyOf"][1]["properties"]["arguments"], Json({{"type", "object"}}));
  EXPECT_FALSE(toolCallConstraint(ToolCallFamily::kHermes, tools, {ToolChoiceMode::kAuto, ""}));
  EXPECT_FALSE(toolCallConstraint(ToolCallFamily::kHermes, tools, {ToolChoiceMode::kNone, ""}));
}

// Pydantic-style parameters ($defs and local $refs, "#" included) point
// into the parameters, not into the call schema that nests them: they were
// refused as "points at nothing" (or hit the wrong definition).
TEST(ToolCallConstraintTest, ParametersRefsResolveWithinTheirOwnSchema) {
  const Json tools = Json::parse(R"([
    {"type":"function","function":{"name":"order","parameters":{
      "$defs":{"item":{"type":"object","properties":{"sku":{"type":"string"}},"required":["sku"]}},
      "type":"object","properties":{"items":{"type":"array","items":{"$ref":"#/$defs/item"}},
        "note":{"const":{"$ref":"#/$defs/item"}}},
      "required":["items"]}}},
    {"type":"function","function":{"name":"tree","parameters":{
      "$defs":{"item":{"type":"integer"}},
      "type":"object","properties":{"v":{"$ref":"#/$defs/item"},"kids":{"type":"array","items":{"$ref":"#"}}},
      "required":["v"]}}}])");
  for (const ToolChoice& choice : {ToolChoice{ToolChoiceMode::kRequired, ""},
                                   ToolChoice{ToolChoiceMode::kNamed, "tree"}}) {
    std::optional<ToolCallConstraint> c = toolCallConstraint(ToolCallFamily::kJson, tools, choice);
    ASSERT_TRUE(c.has_value());
    absl::StatusOr<std::string> text = grammarForJsonSchema(c->schema);
    ASSERT_TRUE(text.ok()) << text.status();
    grammar::testing::ByteMatcher m(*grammar::parseGrammar(*text));
    EXPECT_TRUE(m.accepts(R"({"name":"tree","arguments":{"v":1,"kids":[{"v":2,"kids":[]}]}})"));
    EXPECT_FALSE(m.accepts(R"({"name":"tree","arguments":{"v":"1"}})"));
    if (choice.mode != ToolChoiceMode::kRequired) continue;
    EXPECT_TRUE(m.accepts(R"({"name":"order","arguments":{"items":[{"sku":"a"}]}})"));
    EXPECT_FALSE(m.accepts(R"({"name":"order","arguments":{"items":[1]}})"));
    // a const value is data: its "$ref" is not rewritten.
    EXPECT_TRUE(m.accepts(
        R"({"name":"order","arguments":{"items":[],"note":{"$ref":"#/$defs/item"}}})"));
  }
}

}  // namespace
}  // namespace tandem::openai
