// `tandem generate` run as a subprocess: llama.cpp's greedy tokens for one
// prompt and for a whole batch, and clear errors for bad input.
#include <filesystem>
#include <sstream>

#include "common/mapped_file.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/cli/cli_runner.h"
#include "tests/test_paths.h"

namespace tandem {
namespace {

using nlohmann::json;
using testing::CommandResult;

class GenerateCommandTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::makeTempDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  CommandResult tandem(const std::vector<std::string>& args) { return testing::runTandem(args, dir_); }
  static json oracle() {
    return json::parse(readFile(testing::sourceDir() + "/models/stories260K/greedy_oracle.json").value());
  }
  std::string dir_;
};

TEST_F(GenerateCommandTest, JsonOutputMatchesTheOracleFromTextAndFromIds) {
  const json c = oracle()["cases"][0];
  std::string ids;
  for (int id : c["prompt_ids"]) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  for (const std::vector<std::string>& prompt :
       {std::vector<std::string>{"--prompt", c["prompt"]}, std::vector<std::string>{"--prompt-ids", ids}}) {
    std::vector<std::string> args = {"generate", "--model", testing::storiesHfDir(), "--max-tokens", "48", "--json"};
    args.insert(args.end(), prompt.begin(), prompt.end());
    CommandResult r = tandem(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json out = json::parse(r.out);
    EXPECT_EQ(out["prompt_ids"], c["prompt_ids"]);
    EXPECT_EQ(out["completion_ids"], c["completion_ids"]);
    EXPECT_EQ(out["text"], c["completion_text"]);
    EXPECT_GT(out["timings"]["prefill_tok_s"].get<double>(), 0);
    EXPECT_GT(out["timings"]["decode_tok_s"].get<double>(), 0);
  }
}

TEST_F(GenerateCommandTest, BatchFileRunsEveryPromptTogether) {
  const json cases = oracle()["cases"];
  std::string lines;
  for (const auto& c : cases) lines += c["prompt"].get<std::string>() + "\n";
  ASSERT_TRUE(writeFile(dir_ + "/prompts.txt", lines).ok());
  CommandResult r = tandem({"generate", "--model", testing::storiesGguf(), "--batch", dir_ + "/prompts.txt",
                            "--max-tokens", "48", "--chunk-size", "7", "--json", "--threads", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream in(r.out);
  std::string line;
  size_t i = 0;
  for (; std::getline(in, line); ++i) {
    ASSERT_LT(i, cases.size());
    EXPECT_EQ(json::parse(line)["completion_ids"], cases[i]["completion_ids"]) << "prompt " << i;
  }
  EXPECT_EQ(i, cases.size());
}

TEST_F(GenerateCommandTest, BadInputsFailWithAClearMessage) {
  const std::string model = testing::storiesGguf();
  const std::vector<std::vector<std::string>> bad = {
      {"generate", "--model", model, "--prompt", ""},
      {"generate", "--model", model, "--prompt", "Once", "--max-tokens", "0"},
      {"generate", "--model", model, "--prompt", "Once", "--temperature", "-1"},
      {"generate", "--model", model, "--prompt", "Once", "--top-p", "1.5"},
      {"generate", "--model", model, "--prompt-ids", "1,99999"},
      {"generate", "--model", model, "--prompt-ids", "1,x"},
      {"generate", "--model", model, "--prompt", std::string(3000, 'a') + " story"},
  };
  for (const auto& args : bad) {
    CommandResult r = tandem(args);
    EXPECT_EQ(r.exit_code, 1) << args.back();
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  }
}

}  // namespace
}  // namespace tandem
