#include "text/grammar/json_schema_compiler.h"

#include <gtest/gtest.h>

#include "tests/text/grammar/grammar_test_util.h"

namespace tandem::grammar {
namespace {

using Json = nlohmann::ordered_json;
using testing::ByteMatcher;

ByteMatcher compileSchema(std::string_view schema, JsonGrammarOptions options = {}) {
  absl::StatusOr<std::string> text = compileJsonSchema(Json::parse(schema), options);
  EXPECT_TRUE(text.ok()) << text.status();
  absl::StatusOr<Grammar> g = parseGrammar(text.ok() ? *text : "root ::= \"\"");
  EXPECT_TRUE(g.ok()) << g.status() << "\n" << *text;
  return ByteMatcher(std::move(*g));
}

std::string schemaErrorOf(std::string_view schema) {
  absl::StatusOr<std::string> text = compileJsonSchema(Json::parse(schema));
  EXPECT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(text.status().message());
}

struct Case {
  const char* schema;
  std::vector<std::string> accepted;
  std::vector<std::string> rejected;
};

void check(const Case& c) {
  ByteMatcher m = compileSchema(c.schema);
  for (const std::string& s : c.accepted) EXPECT_TRUE(m.accepts(s)) << c.schema << "\n  " << s;
  for (const std::string& s : c.rejected) EXPECT_FALSE(m.accepts(s)) << c.schema << "\n  " << s;
}

TEST(JsonSchemaCompilerTest, PrimitiveTypes) {
  check({R"({"type":"boolean"})", {"true", "false"}, {"True", "1", "\"true\""}});
  check({R"({"type":"null"})", {"null"}, {"nul", "None"}});
  check({R"({"type":"string"})",
         {R"("")", R"("abc")", R"("a\"b\\c\n\u00e9")", "\"日本\""},
         {"abc", R"("a"b")", "\"a\nb\"", R"("\x")", R"("\u12")"}});
  check({R"({"type":"integer"})", {"0", "-7", "1234567890"}, {"01", "1.0", "-", "1e3", "+1"}});
  check({R"({"type":"number"})",
         {"0", "-0.5", "3.25", "1e10", "2.5E-3"},
         {".5", "1.", "01", "1e", "--1", "NaN"}});
  check({R"({"type":["string","null"]})", {"null", R"("x")"}, {"1"}});
}

TEST(JsonSchemaCompilerTest, ObjectsKeepOrderAndRequiredProperties) {
  const char* schema = R"({"type":"object","properties":{
      "name":{"type":"string"},"age":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}},
      "required":["name"],"additionalProperties":false})";
  check({schema,
         {R"({"name":"a"})", R"({"name":"a","age":3})", R"({"name": "a", "tags": []})",
          R"({"name":"a","age":3,"tags":["x","y"]})"},
         {R"({})", R"({"age":3})", R"({"age":3,"name":"a"})", R"({"name":"a","extra":1})",
          R"({"name":"a",})", R"({"name":"a""age":3})", R"({"name":1})"}});
  // all optional: the empty object and any ordered subset.
  check({R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}}})",
         {"{}", R"({"a":1})", R"({"b":2})", R"({"a":1,"b":2})"},
         {R"({"b":2,"a":1})", R"({,"b":2})", R"({"c":1})"}});
}

TEST(JsonSchemaCompilerTest, AdditionalPropertiesAllowExtraMembers) {
  check({R"({"type":"object","additionalProperties":{"type":"integer"}})",
         {"{}", R"({"x":1,"y":2})"},
         {R"({"x":"1"})"}});
  check({R"({"type":"object","properties":{"id":{"type":"integer"}},"required":["id"],
            "additionalProperties":true})",
         {R"({"id":1})", R"({"id":1,"note":"hi","n":[1,{}]})"},
         {R"({"note":"hi"})"}});
}

TEST(JsonSchemaCompilerTest, ArraysBoundItems) {
  check({R"({"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":3})",
         {"[1,2]", "[1, 2, 3]"},
         {"[]", "[1]", "[1,2,3,4]", "[1,,2]", "[1,2,]"}});
  check({R"({"type":"array","items":{"type":"boolean"}})", {"[]", "[true]", "[true,false,true]"},
         {"[1]"}});
  check({R"({"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}]})",
         {R"([1,"a"])"}, {"[1]", R"([1,"a",2])", R"(["a",1])"}});
  check({R"({"type":"array","maxItems":0})", {"[]"}, {"[1]"}});
}

// compact output: a model cannot spend its budget on padding.
TEST(JsonSchemaCompilerTest, WhitespaceIsAtMostOneSpaceAfterColonsAndCommas) {
  const std::vector<std::string> compact = {
      R"({"a":1,"b":[1,2],"c":{"d":"x"}})", R"({"a": 1, "b": [1, 2], "c": {"d": "x"}})",
      R"({"a":1, "b":[1,2], "c":{"d": "x"}})"};
  const std::vector<std::string> padded = {
      R"({"a":  1,"b":[1,2],"c":{"d":"x"}})", R"({"a" :1,"b":[1,2],"c":{"d":"x"}})",
      R"({ "a":1,"b":[1,2],"c":{"d":"x"}})", R"({"a":1,"b":[1,2],"c":{"d":"x"} })",
      R"({"a":1 ,"b":[1,2],"c":{"d":"x"}})", R"({"a":1,"b":[ 1,2],"c":{"d":"x"}})",
      R"({"a":1,"b":[1,2 ],"c":{"d":"x"}})", "{\"a\":1,\n\"b\":[1,2],\"c\":{\"d\":\"x\"}}",
      "{\"a\":\t1,\"b\":[1,2],\"c\":{\"d\":\"x\"}}", R"( {"a":1,"b":[1,2],"c":{"d":"x"}})",
      R"({"a":1,"b":[1,2],"c":{"d":"x"}} )"};
  const char* schema = R"({"type":"object","properties":{"a":{"type":"integer"},
      "b":{"type":"array","items":{"type":"integer"}},
      "c":{"type":"object","additionalProperties":{"type":"string"}}},"required":["a","b","c"]})";
  check({schema, compact, padded});
  ByteMatcher any(*parseGrammar(jsonObjectGrammar()));
  for (const std::string& s : compact) EXPECT_TRUE(any.accepts(s)) << s;
  for (const std::string& s : padded) EXPECT_FALSE(any.accepts(s)) << s;
  check({R"({"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}]})",
         {R"([1,"a"])", R"([1, "a"])"}, {R"([1 ,"a"])", R"([1,  "a"])", R"([ 1,"a"])"}});
}

// strict parsers (nlohmann, serde_json) refuse a lone surrogate escape.
TEST(JsonSchemaCompilerTest, StringEscapesNeverLeaveALoneSurrogate) {
  check({R"({"type":"string","maxLength":2})",
         {R"("\ud83d\ude00")", R"("\uD7FF\uE000")", R"("\u00e9x")"},
         {R"("\ud83d")", R"("\ude00")", R"("\ud83dx")", R"("\ude00\ud83d")"}});
}

TEST(JsonSchemaCompilerTest, EnumConstAnyOf) {
  check({R"({"enum":["red","green",3,null,{"a":[1]}]})",
         {R"("red")", R"("green")", "3", "null", R"({"a":[1]})"},
         {R"("blue")", "4", R"("Red")"}});
  check({R"({"const":"fixed"})", {R"("fixed")"}, {R"("other")"}});
  check({R"({"anyOf":[{"type":"integer"},{"type":"object","properties":{"k":{"const":true}},"required":["k"]}]})",
         {"5", R"({"k":true})"},
         {R"({"k":false})", R"("5")"}});
  check({R"({"oneOf":[{"type":"null"},{"type":"boolean"}]})", {"null", "true"}, {"0"}});
  check({R"({"allOf":[{"type":"integer"}]})", {"1"}, {"\"1\""}});
}

TEST(JsonSchemaCompilerTest, StringLengthsAndFormats) {
  check({R"({"type":"string","minLength":2,"maxLength":3})",
         {R"("ab")", R"("abc")", R"("é日")", R"("\n\t")"},
         {R"("a")", R"("abcd")"}});
  check({R"({"type":"string","format":"date"})", {R"("2024-02-29")", R"("1999-12-31")"},
         {R"("2024-13-01")", R"("2024-1-01")", R"("2024-01-32")", R"("x")"}});
  check({R"({"type":"string","format":"time"})", {R"("23:59:59Z")", R"("01:02:03.5+05:30")"},
         {R"("24:00:00Z")", R"("12:00:00")"}});
  check({R"({"type":"string","format":"date-time"})", {R"("2024-05-06T07:08:09Z")"},
         {R"("2024-05-06 07:08:09Z")"}});
  check({R"({"type":"string","format":"uuid"})", {R"("123e4567-e89b-12d3-a456-426614174000")"},
         {R"("123e4567e89b12d3a456426614174000")", R"("123e4567-e89b-12d3-a456-42661417400g")"}});
}

TEST(JsonSchemaCompilerTest, IntegerRangesAreExact) {
  ByteMatcher m = compileSchema(R"({"type":"integer","minimum":-15,"maximum":237})");
  for (int v = -40; v <= 300; ++v) {
    EXPECT_EQ(m.accepts(std::to_string(v)), v >= -15 && v <= 237) << v;
  }
  EXPECT_FALSE(m.accepts("007"));
  ByteMatcher ex = compileSchema(R"({"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":10})");
  for (int v = -3; v <= 13; ++v) EXPECT_EQ(ex.accepts(std::to_string(v)), v >= 1 && v <= 9) << v;
  ByteMatcher low = compileSchema(R"({"type":"integer","minimum":100})");
  EXPECT_TRUE(low.accepts("100"));
  EXPECT_TRUE(low.accepts("123456789"));
  EXPECT_FALSE(low.accepts("99"));
  EXPECT_FALSE(low.accepts("-100"));
  ByteMatcher neg = compileSchema(R"({"type":"integer","maximum":-5})");
  EXPECT_TRUE(neg.accepts("-5"));
  EXPECT_TRUE(neg.accepts("-1000"));
  EXPECT_FALSE(neg.accepts("-4"));
  EXPECT_FALSE(neg.accepts("0"));
}

TEST(JsonSchemaCompilerTest, NumberRangesWithIntegerBounds) {
  check({R"({"type":"number","minimum":0,"maximum":1})",
         {"0", "0.25", "1", "1.0", "1.00"},
         {"1.5", "-0.1", "2", "1e0"}});
  check({R"({"type":"number","minimum":-2,"maximum":3})",
         {"-2", "-1.5", "0", "2.999", "3"},
         {"-2.5", "3.01", "-3"}});
  check({R"({"type":"number","minimum":10})", {"10", "10.5", "99999"}, {"9.99", "-10"}});
}

TEST(JsonSchemaCompilerTest, DefsAndRefsIncludingRecursion) {
  const char* schema = R"({
    "$defs":{"node":{"type":"object","properties":{
        "v":{"type":"integer"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}},
        "required":["v"]}},
    "$ref":"#/$defs/node"})";
  check({schema,
         {R"({"v":1})", R"({"v":1,"children":[{"v":2},{"v":3,"children":[{"v":4}]}]})"},
         {R"({"v":1,"children":[{}]})", R"({"children":[]})"}});
  check({R"({"definitions":{"p":{"type":"integer"}},"type":"object",
             "properties":{"x":{"$ref":"#/definitions/p"}},"required":["x"]})",
         {R"({"x":5})"}, {R"({"x":"5"})"}});
}

TEST(JsonSchemaCompilerTest, AnyValueAndJsonObject) {
  check({"{}", {"1", R"("s")", "[1,[2,{}]]", R"({"a":{"b":null}})", "true"}, {"tru", "{,}"}});
  absl::StatusOr<Grammar> g = parseGrammar(jsonObjectGrammar());
  ASSERT_TRUE(g.ok()) << g.status();
  ByteMatcher m(std::move(*g));
  EXPECT_TRUE(m.accepts(R"({"a":[1,2.5,"x",{"b":false}],"c":null})"));
  EXPECT_TRUE(m.accepts("{}"));
  EXPECT_FALSE(m.accepts("[]"));
  EXPECT_FALSE(m.accepts(R"({"a":1} )"));  // nothing after the value
}

TEST(JsonSchemaCompilerTest, PrefixAndSuffixWrapTheValue) {
  ByteMatcher m = compileSchema(
      R"({"type":"object","properties":{"name":{"const":"get_weather"},"arguments":{"type":"object"}},
          "required":["name","arguments"]})",
      {.prefix = "<tool_call>\n", .suffix = "\n</tool_call>"});
  EXPECT_TRUE(m.accepts("<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}\n</tool_call>"));
  EXPECT_FALSE(m.accepts("{\"name\":\"get_weather\",\"arguments\":{}}"));
  EXPECT_FALSE(m.accepts("<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{}}"));
}

TEST(JsonSchemaCompilerTest, RefusesUnsupportedKeywordsNamingThem) {
  EXPECT_EQ(schemaErrorOf(R"({"type":"object","properties":{"zip":{"type":"string","pattern":"^[0-9]+$"}}})"),
            "JSON schema: keyword 'pattern' at #/properties/zip is not supported");
  EXPECT_EQ(schemaErrorOf(R"({"type":"number","multipleOf":0.5})"),
            "JSON schema: keyword 'multipleOf' at # is not supported");
  EXPECT_EQ(schemaErrorOf(R"({"type":"array","uniqueItems":true})"),
            "JSON schema: keyword 'uniqueItems' at # is not supported");
  EXPECT_EQ(schemaErrorOf(R"({"type":"string","format":"email"})"),
            "JSON schema: string format 'email' (supported: date, time, date-time, uuid) at # is "
            "not supported");
  EXPECT_EQ(schemaErrorOf(R"({"type":"number","minimum":0.5})"),
            "JSON schema: 'minimum' 0.5 on a number (only inclusive integer bounds are) at # is "
            "not supported");
  EXPECT_EQ(schemaErrorOf(R"({"$ref":"https://example.com/s.json"})"),
            "JSON schema: $ref 'https://example.com/s.json' (only local references, \"#...\") at # "
            "is not supported");
  EXPECT_EQ(schemaErrorOf(R"({"allOf":[{"type":"integer"},{"minimum":1}]})"),
            "JSON schema: allOf with more than one schema at # is not supported");
}

TEST(JsonSchemaCompilerTest, RefusesInvalidSchemas) {
  EXPECT_EQ(schemaErrorOf(R"({"type":"strin"})"), "JSON schema: unknown type 'strin' at #");
  EXPECT_EQ(schemaErrorOf(R"({"type":"object","properties":{"a":{}},"required":["b"]})"),
            "JSON schema: 'required' at # names \"b\", which is not in 'properties'");
  EXPECT_EQ(schemaErrorOf(R"({"$ref":"#/$defs/missing"})"),
            "JSON schema: $ref '#/$defs/missing' at # points at nothing");
  EXPECT_EQ(schemaErrorOf(R"({"type":"array","minItems":3,"maxItems":2})"),
            "JSON schema: minItems is above maxItems at #");
  EXPECT_EQ(schemaErrorOf("[1]"), "JSON schema: the schema at # must be an object or a boolean, got array");
  EXPECT_EQ(schemaErrorOf(R"({"properties":{"a":false}})"),
            "JSON schema: the schema at #/properties/a is false (it allows nothing)");
}

}  // namespace
}  // namespace tandem::grammar
