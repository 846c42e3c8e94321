// `tandem model ...` run as a subprocess, checked on its exact output.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/mapped_file.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/cli/cli_runner.h"
#include "tests/test_paths.h"

namespace tandem {
namespace {

using nlohmann::json;

using testing::CommandResult;

class ModelCommandTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::makeTempDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  CommandResult tandem(const std::vector<std::string>& args) { return testing::runTandem(args, dir_); }

  template <class Json>
  std::string writeJson(const std::string& name, const Json& j) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << j.dump();
    return path;
  }

  static json oracle() {
    return json::parse(readFile(testing::sourceDir() + "/models/stories260K/greedy_oracle.json").value());
  }

  std::string dir_;
};

TEST_F(ModelCommandTest, TokenizeReproducesOraclePromptIdsFromBothFormats) {
  const json cases = oracle()["cases"];
  ASSERT_EQ(cases.size(), 8u);
  for (const std::string& model : {testing::storiesGguf(), testing::storiesHfDir()}) {
    for (const auto& c : cases) {
      CommandResult r = tandem({"model", "tokenize", "--model", model, "--text", c["prompt"]});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_EQ(json::parse(r.out), c["prompt_ids"]) << model << ": " << c["prompt"];
    }
  }
}

TEST_F(ModelCommandTest, TokenizeNoSpecialDropsBos) {
  CommandResult with = tandem({"model", "tokenize", "--model", testing::storiesGguf(), "--text", "Once upon a time"});
  CommandResult without = tandem({"model", "tokenize", "--model", testing::storiesGguf(), "--no-special", "--text", "Once upon a time"});
  ASSERT_EQ(with.exit_code, 0);
  ASSERT_EQ(without.exit_code, 0);
  EXPECT_EQ(json::parse(with.out), json::parse("[1,403,407,261,378]"));
  EXPECT_EQ(json::parse(without.out), json::parse("[403,407,261,378]"));
}

TEST_F(ModelCommandTest, TokenizeReadsAFile) {
  std::string path = dir_ + "/prompt.txt";
  ASSERT_TRUE(writeFile(path, "Once upon a time").ok());
  CommandResult r = tandem({"model", "tokenize", "--model", testing::storiesHfDir(), "--file", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out), json::parse("[1,403,407,261,378]"));
}

TEST_F(ModelCommandTest, DetokenizeReproducesOracleCompletionText) {
  const json c = oracle()["cases"][0];
  std::vector<std::string> args = {"model", "detokenize", "--model", testing::storiesGguf()};
  for (int id : c["completion_ids"]) args.push_back(std::to_string(id));
  CommandResult r = tandem(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, c["completion_text"].get<std::string>());
}

TEST_F(ModelCommandTest, RenderChatMatchesTransformersForQwen3WithVariables) {
  // ordered: the expected prompts print tool schemas in the file's key order.
  const auto cases = nlohmann::ordered_json::parse(
      readFile(testing::testDataDir() + "/chat/chat_template_cases.json").value());
  int checked = 0;
  for (const auto& c : cases["cases"]) {
    std::vector<std::string> args = {"model", "render-chat", "--model",
                                     testing::fetchedDataDir() + "/" + c["tokenizer"].get<std::string>(),
                                     "--messages", writeJson("messages.json", c["messages"])};
    if (!c["tools"].is_null()) {
      args.push_back("--tools");
      args.push_back(writeJson("tools.json", c["tools"]));
    }
    if (!c["add_generation_prompt"].get<bool>()) args.push_back("--no-generation-prompt");
    for (const auto& [k, v] : c["extra"].items()) {
      args.push_back("--var");
      args.push_back(k + "=" + v.dump());
    }
    CommandResult r = tandem(args);
    ASSERT_EQ(r.exit_code, 0) << c["case"] << ": " << r.err;
    EXPECT_EQ(r.out, c["expected"].get<std::string>()) << c["tokenizer"] << " " << c["case"];
    ++checked;
  }
  EXPECT_EQ(checked, 23);
}

TEST_F(ModelCommandTest, InspectDescribesBothFormats) {
  for (const std::string& model : {testing::storiesGguf(), testing::storiesHfDir()}) {
    CommandResult r = tandem({"model", "inspect", model});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("llama"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("512"), std::string::npos) << r.out;  // vocab
  }
}

TEST_F(ModelCommandTest, SynthWritesModelsThatLoadBack) {
  for (const std::string format : {"gguf", "hf"}) {
    std::string out = dir_ + "/synth" + (format == "gguf" ? ".gguf" : "");
    CommandResult r = tandem({"model", "synth", "--out", out, "--format", format, "--shape",
                              "dim=64,layers=2,heads=4,kv_heads=2,ffn=128,vocab=32000", "--dtype", "f16",
                              "--vocab-from", testing::testDataDir() + "/tokenizers/ggml-vocab-llama-spm.gguf"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    CommandResult inspect = tandem({"model", "inspect", out});
    ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
    EXPECT_NE(inspect.out.find("f16"), std::string::npos) << inspect.out;
    // the copied vocabulary tokenizes as the source does
    CommandResult tok = tandem({"model", "tokenize", "--model", out, "--text", "Hello world"});
    ASSERT_EQ(tok.exit_code, 0) << tok.err;
    EXPECT_EQ(json::parse(tok.out), json::parse("[1,15043,3186]"));
  }
}

TEST_F(ModelCommandTest, BadInputsFailWithAClearMessage) {
  CommandResult missing = tandem({"model", "inspect", dir_ + "/no-such.gguf"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("no-such.gguf"), std::string::npos) << missing.err;

  ASSERT_TRUE(writeFile(dir_ + "/bad.gguf", "NOPE and more bytes to read").ok());
  CommandResult magic = tandem({"model", "inspect", dir_ + "/bad.gguf"});
  EXPECT_EQ(magic.exit_code, 1);
  EXPECT_NE(magic.err.find("bad.gguf"), std::string::npos) << magic.err;

  CommandResult no_text = tandem({"model", "tokenize", "--model", testing::storiesGguf()});
  EXPECT_NE(no_text.exit_code, 0);

  CommandResult bad_id = tandem({"model", "detokenize", "--model", testing::storiesGguf(), "99999"});
  EXPECT_EQ(bad_id.exit_code, 1);
  EXPECT_NE(bad_id.err.find("99999"), std::string::npos) << bad_id.err;

  std::filesystem::create_directories(dir_ + "/tmpl");
  ASSERT_TRUE(writeFile(dir_ + "/tmpl/tokenizer_config.json",
                        R"({"chat_template": "{% for m in messages %}{{ m.content }"})").ok());
  CommandResult syntax = tandem({"model", "render-chat", "--model", dir_ + "/tmpl", "--messages",
                                 writeJson("m.json", json::parse(R"([{"role":"user","content":"hi"}])"))});
  EXPECT_EQ(syntax.exit_code, 1);
  EXPECT_FALSE(syntax.err.empty());

  CommandResult bad_shape = tandem({"model", "synth", "--out", dir_ + "/x.gguf", "--format", "gguf",
                                    "--shape", "dim=64,layers=zero"});
  EXPECT_EQ(bad_shape.exit_code, 1);

  CommandResult unknown = tandem({"model", "frobnicate"});
  EXPECT_NE(unknown.exit_code, 0);
}

}  // namespace
}  // namespace tandem
