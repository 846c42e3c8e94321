// Every bound on a stranger's JSON schema (json_schema_compiler.h): each
// refusal is an InvalidArgument naming its limit, schemas at the limit
// still compile, and the inputs that crashed or stalled the compiler before
// ($ref chains, huge array indices, long required lists) are handled.
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tests/text/grammar/grammar_test_util.h"
#include "text/grammar/grammar_parser.h"
#include "text/grammar/json_schema_compiler.h"

namespace tandem::grammar {
namespace {

using Json = nlohmann::ordered_json;
using testing::ByteMatcher;

std::string schemaLimitErrorOf(const Json& schema) {
  absl::StatusOr<std::string> text = compileJsonSchema(schema);
  EXPECT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(text.status().message());
}

// {"type":"array","items":{"type":"array","items":...}} `depth` levels.
Json nestedArrays(int depth) {
  Json schema = {{"type", "integer"}};
  for (int i = 0; i < depth; ++i) schema = {{"type", "array"}, {"items", schema}};
  return schema;
}

TEST(JsonSchemaLimitsTest, NestingIsBoundedNamingTheLimit) {
  EXPECT_TRUE(compileJsonSchema(nestedArrays(kMaxSchemaDepth)).ok());
  const std::string error = schemaLimitErrorOf(nestedArrays(kMaxSchemaDepth + 1));
  EXPECT_EQ(error.substr(0, 44), "JSON schema nests deeper than 64 levels at #") << error;
}

TEST(JsonSchemaLimitsTest, ARefChainCountsAsNesting) {
  // each $def refers to the next: the compiler followed them with a fresh
  // depth each time, one stack frame a link, whatever their number.
  Json defs = Json::object();
  const int n = 20000;
  for (int i = 0; i < n; ++i) defs[absl::StrCat("d", i)] = {{"$ref", absl::StrCat("#/$defs/d", i + 1)}};
  defs[absl::StrCat("d", n)] = {{"type", "integer"}};
  const Json schema = {{"$defs", defs}, {"$ref", "#/$defs/d0"}};
  EXPECT_EQ(schemaLimitErrorOf(schema),
            "JSON schema nests deeper than 64 levels at #/$defs/d64 ($refs followed included)");
  // a recursive schema is no chain: it compiles once and recurses in the grammar.
  const Json tree = Json::parse(R"({"$defs":{"n":{"type":"array","items":{"$ref":"#/$defs/n"}}},
                                    "$ref":"#/$defs/n"})");
  ByteMatcher m(*parseGrammar(*compileJsonSchema(tree)));
  EXPECT_TRUE(m.accepts("[[],[[[]]]]"));
}

TEST(JsonSchemaLimitsTest, ARefToAHugeArrayIndexPointsAtNothing) {
  // std::stoul threw out_of_range on it, which ended the process.
  const Json schema = Json::parse(
      R"({"$defs":[{"type":"integer"}],"$ref":"#/$defs/99999999999999999999999999"})");
  EXPECT_EQ(schemaLimitErrorOf(schema),
            "JSON schema: $ref '#/$defs/99999999999999999999999999' at # points at nothing");
  ByteMatcher m(*parseGrammar(*compileJsonSchema(
      Json::parse(R"({"$defs":[{"type":"integer"}],"$ref":"#/$defs/0"})"))));
  EXPECT_TRUE(m.accepts("12"));
}

TEST(JsonSchemaLimitsTest, EnumValuesAreBounded) {
  Json values = Json::array();
  for (int i = 0; i < kMaxEnumValues; ++i) values.push_back(absl::StrCat("v", i));
  ByteMatcher m(*parseGrammar(*compileJsonSchema({{"enum", values}})));
  EXPECT_TRUE(m.accepts("\"v4095\""));
  values.push_back("one more");
  EXPECT_EQ(schemaLimitErrorOf({{"enum", values}}),
            "JSON schema: 'enum' at # has 4097 values; at most 4096 are allowed");
}

TEST(JsonSchemaLimitsTest, SchemasInAllAreBounded) {
  Json properties = Json::object();
  for (int i = 0; i < kMaxSchemaNodes; ++i) properties[absl::StrCat("p", i)] = {{"type", "null"}};
  EXPECT_EQ(schemaLimitErrorOf({{"type", "object"}, {"properties", properties}}),
            "JSON schema has more than 16384 schemas (at #/properties/p16383; properties, items "
            "and branches counted)");
  properties.erase("p16383");
  EXPECT_TRUE(compileJsonSchema({{"type", "object"}, {"properties", properties}}).ok());
}

TEST(JsonSchemaLimitsTest, ManyRequiredPropertiesCompileInLinearTime) {
  // 'required' was matched against every property for each name.
  Json properties = Json::object();
  Json required = Json::array();
  for (int i = 0; i < 6000; ++i) {
    properties[absl::StrCat("p", i)] = {{"type", "null"}};
    required.push_back(absl::StrCat("p", i));
  }
  absl::StatusOr<std::string> text =
      compileJsonSchema({{"type", "object"}, {"properties", properties}, {"required", required}});
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_TRUE(parseGrammar(*text).ok());
}

TEST(JsonSchemaLimitsTest, DeepConstValuesAreRefusedBeforeTheyAreWritten) {
  // a const nested 100000 levels: writing it out recursed once a level.
  // (parsed, not built: copying a JSON value recurses too)
  const Json schema = Json::parse(absl::StrCat("{\"const\":", std::string(100000, '['), "1",
                                               std::string(100000, ']'), "}"));
  EXPECT_EQ(schemaLimitErrorOf(schema), "JSON schema: the document nests deeper than 256 levels");
}

}  // namespace
}  // namespace tandem::grammar
