#include "text/chat/chat_template.h"

#include <filesystem>
#include <fstream>

#include "common/mapped_file.h"
#include "gtest/gtest.h"
#include "tests/test_paths.h"
#include "tests/text/chat/render_case.h"

namespace tandem::chat {
namespace {

using nlohmann::ordered_json;

class ChatTemplateTest : public ::testing::Test {
 protected:
  static ordered_json loadCases() {
    return ordered_json::parse(readFile(tandem::testing::testDataDir() + "/chat/chat_template_cases.json").value());
  }

  static std::string render(const std::string& source, const ordered_json& vars = ordered_json::object()) {
    auto t = ChatTemplate::parse(source);
    EXPECT_TRUE(t.ok()) << t.status();
    if (!t.ok()) return "<parse error>";
    auto out = (*t)->render(ordered_json::array(), nullptr, false, vars);
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? *out : "<render error>";
  }
};

TEST_F(ChatTemplateTest, RendersEveryReferenceCaseByteExactly) {
  ordered_json cases = loadCases()["cases"];
  ASSERT_EQ(cases.size(), 23u);
  for (const auto& c : cases) {
    std::string tok = c["tokenizer"];
    auto t = ChatTemplate::fromHfDir(tandem::testing::fetchedDataDir() + "/" + tok);
    ASSERT_TRUE(t.ok()) << t.status();
    auto out = (*t)->render(c["messages"], c["tools"], c["add_generation_prompt"].get<bool>(),
                            c["extra"]);
    ASSERT_TRUE(out.ok()) << tok << "/" << c["case"] << ": " << out.status();
    EXPECT_EQ(*out, c["expected"].get<std::string>()) << tok << "/" << c["case"];
  }
}


TEST_F(ChatTemplateTest, ReadsListFormTemplatesAndAddedTokenObjects) {
  std::string dir = tandem::testing::makeTempDir();
  {
    std::ofstream out(dir + "/tokenizer_config.json");
    out << R"({"chat_template": [{"name": "tool_use", "template": "T"},
                                  {"name": "default", "template": "{{ bos_token }}|{{ eos_token }}|{{ messages[0].content }}"}],
               "bos_token": {"content": "<s>", "lstrip": false}, "eos_token": null})";
  }
  auto t = ChatTemplate::fromHfDir(dir);
  ASSERT_TRUE(t.ok()) << t.status();
  auto out = (*t)->render(nlohmann::json::parse(R"([{"role": "user", "content": "hi"}])"), nullptr, true);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, "<s>||hi");
  std::filesystem::remove_all(dir);
}

TEST_F(ChatTemplateTest, ReportsMissingTemplateAsNotFound) {
  std::string dir = tandem::testing::makeTempDir();
  { std::ofstream(dir + "/tokenizer_config.json") << R"({"bos_token": "<s>"})"; }
  EXPECT_EQ(ChatTemplate::fromHfDir(dir).status().code(), absl::StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

TEST_F(ChatTemplateTest, KeepsClientKeyOrderInToolJson) {
  auto t = ChatTemplate::parse("{{ tools | tojson }}");
  ASSERT_TRUE(t.ok());
  auto ordered = (*t)->render(ordered_json::array(), ordered_json::parse(R"([{"type": "function", "b": 1}])"), false);
  ASSERT_TRUE(ordered.ok());
  EXPECT_EQ(*ordered, R"([{"type": "function", "b": 1}])");
  auto sorted = (*t)->render(nlohmann::json::array(), nlohmann::json::parse(R"([{"type": "function", "b": 1}])"), false);
  ASSERT_TRUE(sorted.ok());
  EXPECT_EQ(*sorted, R"([{"b": 1, "type": "function"}])");
}

TEST_F(ChatTemplateTest, RendersHfGenerationTagAsItsBody) {
  EXPECT_EQ(render("{% generation %}gen{% endgeneration %}!"), "gen!");
}

TEST_F(ChatTemplateTest, ProvidesStrftimeNow) {
  std::string year = render("{{ strftime_now('%Y') }}");
  EXPECT_EQ(year.size(), 4u);
}

void expectSyntaxError(const std::string& source, const std::string& what, const std::string& where) {
  auto t = ChatTemplate::parse(source);
  ASSERT_FALSE(t.ok()) << source;
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find(what), std::string::npos) << t.status();
  EXPECT_NE(t.status().message().find(where), std::string::npos) << t.status();
}

TEST_F(ChatTemplateTest, RejectsSyntaxErrorsWithTheirPosition) {
  expectSyntaxError("ok\n{% for x in xs %}{{ x }}", "expected 'endfor'", "line 2, column 1");
  expectSyntaxError("a{% frobnicate %}", "unknown tag 'frobnicate'", "line 1, column 5");
  expectSyntaxError("{{ 'abc }}", "unterminated string", "line 1, column 4");
  expectSyntaxError("{% if x %}a{% endfor %}", "unknown tag 'endfor'", "line 1");
  expectSyntaxError("{{ x ", "expected '}}'", "line 1, column 1");
  expectSyntaxError("{{ (1 }}", "unexpected '}'", "line 1");
  expectSyntaxError("{# never closed", "missing end of comment", "line 1, column 1");
  expectSyntaxError("{% break %}", "outside of a loop", "line 1");
  expectSyntaxError("{{ 1 + }}", "unexpected end of print statement", "line 1, column 8");
}

TEST_F(ChatTemplateTest, SurfacesRaiseExceptionMessage) {
  auto out = renderSource("a{{ raise_exception('Conversation roles must alternate') }}", ordered_json::object());
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(out.status().message(), "Conversation roles must alternate");
}

TEST_F(ChatTemplateTest, ReportsEvaluationErrorsLikeJinja) {
  auto concat = renderSource("{{ 'a' + 1 }}", ordered_json::object());
  EXPECT_EQ(concat.status().message(), "can only concatenate str (not \"int\") to str");
  auto undefined = renderSource("{{ missing.attr }}", ordered_json::object());
  EXPECT_EQ(undefined.status().message(), "'missing' is undefined");
  auto call = renderSource("{{ nothing() }}", ordered_json::object());
  EXPECT_EQ(call.status().code(), absl::StatusCode::kInvalidArgument);
  auto unknown_filter = renderSource("{{ 1 | frob }}", ordered_json::object());
  EXPECT_EQ(unknown_filter.status().message(), "no filter named 'frob'");
  auto div = renderSource("{{ 1 / 0 }}", ordered_json::object());
  EXPECT_EQ(div.status().message(), "division by zero");
}

TEST_F(ChatTemplateTest, RefusesANamespaceThatWouldHoldItself) {
  // a namespace set to hold itself, directly or through containers and
  // another namespace, would be a reference cycle: memory never freed (the
  // fuzzer's find) and a print that never ends.
  for (const char* source : {
           "{% set ns = namespace(n=0) %}{% set ns.n = ns %}",
           "{% set ns = namespace() %}{% set ns.l = [1, {'k': (2, ns)}] %}",
           "{% set a = namespace() %}{% set b = namespace(x=[a]) %}{% set a.y = b %}",
       }) {
    auto out = renderSource(source, ordered_json::object());
    ASSERT_FALSE(out.ok()) << source;
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << source;
    EXPECT_NE(out.status().message().find("holds the namespace itself"), std::string::npos) << out.status();
  }
  // one namespace inside another, and the same list twice, are no cycle.
  EXPECT_EQ(render("{% set a = namespace(n=1) %}{% set b = namespace() %}{% set l = [a, a] %}"
                   "{% set b.pair = [l, l] %}{% set b.a = a %}{{ b.a.n }}{{ b.pair | length }}"),
            "12");
}

TEST_F(ChatTemplateTest, BoundsRecursionNestingAndWork) {
  // deep expression and block nesting are syntax errors, not stack overflows
  EXPECT_FALSE(ChatTemplate::parse("{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}").ok());
  EXPECT_FALSE(ChatTemplate::parse("{{ " + std::string(100000, '-') + "1 }}").ok());
  std::string ifs;
  for (int i = 0; i < 5000; ++i) ifs += "{% if true %}";
  EXPECT_FALSE(ChatTemplate::parse(ifs).ok());
  // unbounded macro recursion, runaway loops and huge output fail cleanly
  auto rec = renderSource("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", ordered_json::object());
  EXPECT_EQ(rec.status().message(), "maximum recursion depth exceeded");
  auto loops = renderSource(
      "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
      ordered_json::object());
  EXPECT_EQ(loops.status().code(), absl::StatusCode::kInvalidArgument);
  auto big = renderSource("{{ 'x' * 1000000000 }}", ordered_json::object());
  EXPECT_EQ(big.status().code(), absl::StatusCode::kInvalidArgument);
  auto range = renderSource("{{ range(1000000) | length }}", ordered_json::object());
  EXPECT_EQ(range.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tandem::chat
