// The tool-call parsers of each template family: calls rendered by the real
// chat templates (tests/data/chat/tool_templates) parse back into the same
// calls; canned model outputs of each family give the same content and
// calls however the text is split (every byte boundary, byte by byte), and
// streamed pieces come in OpenAI's order (id and name first, then
// arguments).
#include "router/openai/tool_call_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/mapped_file.h"
#include "nlohmann/json.hpp"
#include "router/openai/tool_call_family.h"
#include "tests/test_paths.h"
#include "text/chat/chat_template.h"

namespace tandem::openai {
namespace {

using Json = nlohmann::ordered_json;

struct Parsed {
  std::string content;
  std::vector<ToolCall> calls;
  bool operator==(const Parsed&) const = default;
};

void PrintTo(const Parsed& p, std::ostream* os) {
  *os << "content=" << Json(p.content).dump() << " calls=[";
  for (const ToolCall& c : p.calls) *os << c.id << ":" << c.name << ":" << c.arguments << " ";
  *os << "]";
}

// ids "id0", "id1", ... so that runs compare equal.
ToolCallParserPtr parser(ToolCallFamily family) {
  auto next = std::make_shared<int>(0);
  return makeToolCallParser(family, [next] { return "id" + std::to_string((*next)++); });
}

Parsed parsePieces(ToolCallFamily family, const std::vector<std::string>& pieces) {
  ToolCallParserPtr p = parser(family);
  Parsed out;
  auto take = [&out](ParsedText text) {
    out.content += text.content;
    accumulateToolCalls(text.calls, out.calls);
  };
  for (const std::string& piece : pieces) take(p->push(piece));
  take(p->finish());
  return out;
}

Parsed parseWhole(ToolCallFamily family, const std::string& text) {
  return parsePieces(family, {text});
}

// parses `text` split in two at every byte, and byte by byte: each must
// agree with the whole.
void expectSameAtEverySplit(ToolCallFamily family, const std::string& text) {
  const Parsed whole = parseWhole(family, text);
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    EXPECT_EQ(parsePieces(family, {text.substr(0, cut), text.substr(cut)}), whole)
        << "split at " << cut << " of " << Json(text).dump();
  }
  std::vector<std::string> bytes;
  for (char c : text) bytes.emplace_back(1, c);
  EXPECT_EQ(parsePieces(family, bytes), whole) << "byte by byte: " << Json(text).dump();
}

Json weatherTools() {
  return Json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "the weather in a city",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"},
        "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time", "description": "the time in a zone",
      "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}}}}])");
}

struct TemplateFamily {
  std::string file;
  ToolCallFamily family;
  std::string bos, eos;
  std::string end_of_turn;  // what the model ends its turn with (its EOS)
};

class RealTemplateTest : public ::testing::TestWithParam<TemplateFamily> {
 protected:
  chat::ChatTemplatePtr load() {
    absl::StatusOr<std::string> source =
        readFile(tandem::testing::testDataDir() + "/chat/tool_templates/" + GetParam().file);
    EXPECT_TRUE(source.ok()) << source.status();
    absl::StatusOr<chat::ChatTemplatePtr> t = chat::ChatTemplate::parse(*source);
    EXPECT_TRUE(t.ok()) << t.status();
    (*t)->setSpecialTokens(GetParam().bos, GetParam().eos);
    source_ = *source;
    return std::move(*t);
  }

  // what the model writes for `assistant` after `user`: the render of the
  // whole conversation past the prompt that asks for its turn, without its
  // end-of-turn token.
  std::string assistantTurn(const chat::ChatTemplate& t, const Json& user, const Json& assistant) {
    absl::StatusOr<std::string> prompt = t.render(Json::array({user}), weatherTools(), true);
    absl::StatusOr<std::string> whole =
        t.render(Json::array({user, assistant}), weatherTools(), false);
    EXPECT_TRUE(prompt.ok()) << prompt.status();
    EXPECT_TRUE(whole.ok()) << whole.status();
    if (!prompt.ok() || !whole.ok()) return "";
    EXPECT_EQ(whole->substr(0, prompt->size()), *prompt);
    std::string turn = whole->substr(prompt->size());
    const std::string& end = GetParam().end_of_turn;
    EXPECT_EQ(turn.substr(turn.size() - end.size()), end) << turn;
    return turn.substr(0, turn.size() - end.size());
  }

  std::string source_;
};

Json toolCall(const std::string& id, const std::string& name, const Json& arguments) {
  return Json{{"id", id}, {"type", "function"},
              {"function", {{"name", name}, {"arguments", arguments}}}};
}

TEST_P(RealTemplateTest, TheFamilyIsToldFromTheTemplate) {
  load();
  EXPECT_EQ(detectToolCallFamily(source_), GetParam().family);
}

TEST_P(RealTemplateTest, ACallTheTemplateRendersParsesBackToTheSameCall) {
  chat::ChatTemplatePtr t = load();
  const Json user = {{"role", "user"}, {"content", "What is the weather in Paris?"}};
  const Json arguments = {{"city", "Paris"}, {"unit", "c"}};
  const Json assistant = {{"role", "assistant"}, {"content", ""},
                          {"tool_calls", Json::array({toolCall("abcDEF123", "get_weather", arguments)})}};
  const std::string turn = assistantTurn(*t, user, assistant);
  ASSERT_FALSE(turn.empty());
  const Parsed parsed = parseWhole(GetParam().family, turn);
  ASSERT_EQ(parsed.calls.size(), 1u) << turn;
  EXPECT_EQ(parsed.calls[0].name, "get_weather");
  EXPECT_EQ(Json::parse(parsed.calls[0].arguments), arguments) << parsed.calls[0].arguments;
  EXPECT_EQ(parsed.calls[0].id, "id0");
  // Qwen3 writes an empty thought before the call; nothing else is content.
  EXPECT_EQ(parsed.content, GetParam().family == ToolCallFamily::kHermes ? "<think>\n\n</think>" : "")
      << turn;
  expectSameAtEverySplit(GetParam().family, turn);
}

TEST_P(RealTemplateTest, TwoCallsParseBackInOrderWhereTheTemplateRendersThem) {
  chat::ChatTemplatePtr t = load();
  const Json user = {{"role", "user"}, {"content", "Weather in Paris and the time in Tokyo?"}};
  const Json first = {{"city", "Paris"}};
  const Json second = {{"zone", "Asia/Tokyo"}};
  const Json assistant = {{"role", "assistant"}, {"content", ""},
                          {"tool_calls", Json::array({toolCall("abcDEF123", "get_weather", first),
                                                      toolCall("xyzXYZ789", "get_time", second)})}};
  if (GetParam().family == ToolCallFamily::kLlama3Json) {
    // Llama 3.1's template renders one call per turn: it raises on two.
    absl::StatusOr<std::string> whole = t->render(Json::array({user, assistant}), weatherTools(), false);
    EXPECT_FALSE(whole.ok()) << *whole;
    return;
  }
  const std::string turn = assistantTurn(*t, user, assistant);
  const Parsed parsed = parseWhole(GetParam().family, turn);
  ASSERT_EQ(parsed.calls.size(), 2u) << turn;
  EXPECT_EQ(parsed.calls[0].name, "get_weather");
  EXPECT_EQ(Json::parse(parsed.calls[0].arguments), first);
  EXPECT_EQ(parsed.calls[1].name, "get_time");
  EXPECT_EQ(Json::parse(parsed.calls[1].arguments), second);
  EXPECT_EQ(parsed.calls[1].id, "id1");
  expectSameAtEverySplit(GetParam().family, turn);
}

INSTANTIATE_TEST_SUITE_P(
    Families, RealTemplateTest,
    ::testing::Values(
        TemplateFamily{"llama3_1.jinja", ToolCallFamily::kLlama3Json, "<|begin_of_text|>",
                       "<|eot_id|>", "<|eot_id|>"},
        TemplateFamily{"qwen3.jinja", ToolCallFamily::kHermes, "", "<|im_end|>", "<|im_end|>\n"},
        TemplateFamily{"mistral_v03.jinja", ToolCallFamily::kMistral, "<s>", "</s>", "</s>"}),
    [](const ::testing::TestParamInfo<TemplateFamily>& info) {
      return std::string(toolCallFamilyName(info.param.family));
    });

TEST(ToolCallFamilyTest, ATemplateWithoutToolSyntaxIsPlainJson) {
  EXPECT_EQ(detectToolCallFamily("{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}"),
            ToolCallFamily::kJson);
  // Llama 3.0's template has the headers but no tool calls.
  EXPECT_EQ(detectToolCallFamily("{{ '<|start_header_id|>' + message['role'] }}"),
            ToolCallFamily::kJson);
}

// canned outputs a model of each family writes.
struct Canned {
  ToolCallFamily family;
  std::string text;
  Parsed want;
};

void PrintTo(const Canned& c, std::ostream* os) { *os << Json(c.text).dump(); }

class CannedOutputTest : public ::testing::TestWithParam<Canned> {};

TEST_P(CannedOutputTest, ParsesToTheSameContentAndCallsAtEverySplit) {
  EXPECT_EQ(parseWhole(GetParam().family, GetParam().text), GetParam().want);
  expectSameAtEverySplit(GetParam().family, GetParam().text);
}

INSTANTIATE_TEST_SUITE_P(
    Outputs, CannedOutputTest,
    ::testing::Values(
        // Llama 3: a bare call, after <|python_tag|>, two separated by ';', "arguments" too
        Canned{ToolCallFamily::kLlama3Json,
               R"({"name": "get_weather", "parameters": {"city": "Paris"}})",
               {"", {{"id0", "get_weather", R"({"city": "Paris"})"}}}},
        Canned{ToolCallFamily::kLlama3Json,
               "<|python_tag|>{\"type\": \"function\", \"name\": \"get_time\", \"parameters\": {}}",
               {"", {{"id0", "get_time", "{}"}}}},
        Canned{ToolCallFamily::kLlama3Json,
               R"({"name": "a", "parameters": {"x": [1, {"y": "}"}]}}; {"name": "b", "arguments": {"q": "\"{"}})",
               {"", {{"id0", "a", R"({"x": [1, {"y": "}"}]})"}, {"id1", "b", R"({"q": "\"{"})"}}}},
        // Llama 3: JSON that is not a call is content, and so is plain text
        Canned{ToolCallFamily::kLlama3Json, R"({"answer": 42, "name": "x"})",
               {R"({"answer": 42, "name": "x"})", {}}},
        Canned{ToolCallFamily::kLlama3Json, "The weather is {\"name\": \"fine\"}.",
               {"The weather is {\"name\": \"fine\"}.", {}}},
        Canned{ToolCallFamily::kLlama3Json, "  \n", {"  \n", {}}},
        // Hermes: text before and between calls, arguments as a JSON string
        Canned{ToolCallFamily::kHermes,
               "Let me check. <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
               "\"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": "
               "\"{\\\"zone\\\": \\\"UTC\\\"}\"}\n</tool_call>",
               {"Let me check.",
                {{"id0", "get_weather", R"({"city": "Paris"})"}, {"id1", "get_time", R"({"zone": "UTC"})"}}}},
        // Hermes: a tag around no JSON, and text with a '<' that is no tag
        Canned{ToolCallFamily::kHermes, "a < b <tool_call> not json</tool_call>",
               {"a < b<tool_call> not json</tool_call>", {}}},
        // Hermes: cut short by max_tokens inside the arguments
        Canned{ToolCallFamily::kHermes,
               "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Pa",
               {"", {{"id0", "get_weather", R"({"city": "Pa)"}}}},
        // Mistral: a list of calls (ids of the model's skipped), and text before
        Canned{ToolCallFamily::kMistral,
               R"(Sure.[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abcDEF123"}, {"name": "get_time", "arguments": {"zone": "UTC"}, "id": "xyzXYZ789"}])",
               {"Sure.", {{"id0", "get_weather", R"({"city": "Paris"})"}, {"id1", "get_time", R"({"zone": "UTC"})"}}}},
        Canned{ToolCallFamily::kMistral, R"([TOOL_CALLS]{"name": "f", "arguments": {"n": -1.5e3}})",
               {"", {{"id0", "f", R"({"n": -1.5e3})"}}}},
        Canned{ToolCallFamily::kMistral, "[TOOL_CALLS] nonsense", {"[TOOL_CALLS] nonsense", {}}},
        // plain JSON (a model without a known syntax)
        Canned{ToolCallFamily::kJson, R"( {"name": "f", "arguments": {"a": true, "b": null}} )",
               {"", {{"id0", "f", R"({"a": true, "b": null})"}}}},
        Canned{ToolCallFamily::kJson, "Once upon a time", {"Once upon a time", {}}}));

TEST(ToolCallParserTest, StreamsTheNameFirstThenTheArgumentsAsTheyArrive) {
  ToolCallParserPtr p = parser(ToolCallFamily::kHermes);
  EXPECT_EQ(p->push("Hi").content, "Hi");
  ParsedText held = p->push(" <tool_");  // may open a call: held back
  EXPECT_TRUE(held.empty());
  ParsedText named = p->push("call>{\"name\": \"get_weather\", \"arguments\": {\"ci");
  EXPECT_EQ(named.content, "");
  ASSERT_EQ(named.calls.size(), 1u);
  EXPECT_EQ(named.calls[0].index, 0);
  EXPECT_EQ(named.calls[0].id, "id0");
  EXPECT_EQ(named.calls[0].name, "get_weather");
  EXPECT_EQ(named.calls[0].arguments, "{\"ci");
  ParsedText more = p->push("ty\": \"Paris\"}}</tool_call>");
  ASSERT_EQ(more.calls.size(), 1u);
  EXPECT_EQ(more.calls[0].id, "");
  EXPECT_EQ(more.calls[0].name, "");
  EXPECT_EQ(more.calls[0].arguments, "ty\": \"Paris\"}");
  EXPECT_EQ(p->numCalls(), 1);
  EXPECT_TRUE(p->finish().empty());
}

TEST(ToolCallParserTest, TrailingWhitespaceIsHeldUntilTheNextTextAndKeptAtTheEnd) {
  ToolCallParserPtr p = parser(ToolCallFamily::kHermes);
  EXPECT_EQ(p->push("Hello \n").content, "Hello");
  EXPECT_EQ(p->push("world").content, " \nworld");
  EXPECT_EQ(p->push("  ").content, "");
  EXPECT_EQ(p->finish().content, "  ");
}

TEST(ToolCallParserTest, IdsAreOpenAIsFormAndMistralsNineCharacters) {
  const std::string id = newToolCallId(ToolCallFamily::kHermes);
  EXPECT_EQ(id.substr(0, 5), "call_");
  EXPECT_EQ(id.size(), 29u);
  const std::string mistral = newToolCallId(ToolCallFamily::kMistral);
  EXPECT_EQ(mistral.size(), 9u);
  for (char c : mistral) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c))) << mistral;
  EXPECT_NE(newToolCallId(ToolCallFamily::kHermes), id);
}

}  // namespace
}  // namespace tandem::openai
