// --kv-cache-dtype through the real tandem binary: an F16 cache gives
// llama.cpp's greedy tokens (its oracle was made with its default F16 KV
// cache), holds a block in half the bytes of an F32 one, and a type the
// flag does not offer ends with a clear error.
#include <filesystem>

#include "common/mapped_file.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/cli/cli_runner.h"
#include "tests/test_paths.h"

namespace tandem {
namespace {

using nlohmann::json;
using testing::CommandResult;

class KvCacheDtypeFlagTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::makeTempDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  CommandResult generate(const std::vector<std::string>& flags) {
    std::vector<std::string> args = {"generate", "--model", testing::storiesGguf(),
                                     "--prompt", "Once upon a time", "--max-tokens", "8"};
    args.insert(args.end(), flags.begin(), flags.end());
    return testing::runTandem(args, dir_);
  }
  std::string dir_;
};

TEST_F(KvCacheDtypeFlagTest, F16CacheOutputEqualsTheOracle) {
  const json c = json::parse(readFile(testing::sourceDir() +
                                      "/models/stories260K/greedy_oracle.json").value())["cases"][1];
  std::string ids;
  for (int id : c["prompt_ids"]) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  const CommandResult r = testing::runTandem({"generate", "--model", testing::storiesGguf(), "--prompt-ids",
                                              ids, "--max-tokens", "48", "--json", "--kv-cache-dtype", "f16"},
                                             dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["completion_ids"], c["completion_ids"]);
}

TEST_F(KvCacheDtypeFlagTest, F16BlocksTakeHalfTheBytes) {
  // stories260K's F32 block: 5 layers x K,V x 16 tokens x 32 values x 4
  // bytes = 20480; 16 KiB holds no F32 block and one F16 block
  const CommandResult f32 = generate({"--kv-cache-dtype", "f32", "--kv-budget", "16K"});
  EXPECT_NE(f32.exit_code, 0);
  EXPECT_NE(f32.err.find("holds no block of 20480 bytes"), std::string::npos) << f32.err;
  const CommandResult f16 = generate({"--kv-cache-dtype", "f16", "--kv-budget", "16K"});
  ASSERT_EQ(f16.exit_code, 0) << f16.err;
  EXPECT_NE(f16.out.find("Once upon a time"), std::string::npos) << f16.out;
  // auto is f32
  const CommandResult dflt = generate({"--kv-budget", "16K"});
  EXPECT_NE(dflt.err.find("holds no block of 20480 bytes"), std::string::npos) << dflt.err;
}

TEST_F(KvCacheDtypeFlagTest, ATypeNotOfferedIsAClearError) {
  // bf16 blocks are f16 blocks' size: workers' transfers could not tell
  // them apart, so the flag does not offer it
  for (const char* bad : {"bf16", "q8_0", "fp8"}) {
    const CommandResult r = generate({"--kv-cache-dtype", bad});
    EXPECT_NE(r.exit_code, 0) << bad;
    EXPECT_NE(r.err.find(std::string("--kv-cache-dtype: ") + bad + " not in {auto,f32,f16}"), std::string::npos)
        << r.err;
  }
}

}  // namespace
}  // namespace tandem
