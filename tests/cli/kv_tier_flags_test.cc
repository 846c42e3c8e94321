// The KV cache flags (--kv-host-bytes, --kv-disk-*, --kv-cache-dtype)
// through the real tandem binary: sizes with suffixes are taken, bad values
// end with a clear error naming the flag, and greedy output with G2 on, or
// with an F16 cache (llama.cpp made the oracle with its default F16 one),
// equals the oracle; an F16 block takes half an F32 one's bytes.
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

class KvTierFlagsTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::makeTempDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  CommandResult generate(const std::vector<std::string>& flags) {
    std::vector<std::string> args = {"generate", "--model", testing::storiesGguf(),
                                     "--prompt", "Once upon a time", "--max-tokens", "8"};
    args.insert(args.end(), flags.begin(), flags.end());
    return testing::runTandem(args, dir_);
  }
  void expectError(const std::vector<std::string>& flags, const std::string& message) {
    const CommandResult r = generate(flags);
    EXPECT_NE(r.exit_code, 0) << r.out;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
  std::string dir_;
};

TEST_F(KvTierFlagsTest, BadValuesEndWithAnErrorNamingTheFlag) {
  expectError({"--kv-host-bytes", "12X"}, "--kv-host-bytes: cannot read '12X'");
  expectError({"--kv-host-bytes", "-5"}, "--kv-host-bytes: cannot read '-5'");
  expectError({"--kv-host-bytes", "99999999999G"}, "--kv-host-bytes: cannot read '99999999999G' (too large)");
  expectError({"--kv-host-bytes", "1K"}, "--kv-host-bytes 1024 holds no KV block");
  expectError({"--kv-host-bytes", "1M", "--no-prefix-cache"}, "need prefix caching");
  expectError({"--kv-disk-bytes", "1G"}, "--kv-disk-bytes needs --kv-disk-path");
  expectError({"--kv-disk-path", dir_}, "--kv-disk-path needs --kv-disk-bytes");
  expectError({"--kv-disk-path", dir_, "--kv-disk-bytes", "0"}, "--kv-disk-bytes: cannot read '0' (must be positive)");
  expectError({"--kv-disk-io", "aio"}, "--kv-disk-io: aio not in {uring,threads}");
  expectError({"--kv-disk-queue-depth", "0"}, "--kv-disk-queue-depth");
  expectError({"--kv-disk-min-hits", "0"}, "--kv-disk-min-hits");
}

TEST_F(KvTierFlagsTest, DiskTierOutputEqualsTheOracleAndItsFileIsMade) {
  const json c = json::parse(readFile(testing::sourceDir() +
                                      "/models/stories260K/greedy_oracle.json").value())["cases"][0];
  std::string ids;
  for (int id : c["prompt_ids"]) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  const std::string disk = dir_ + "/g3";
  const CommandResult r = testing::runTandem(
      {"generate", "--model", testing::storiesGguf(), "--prompt-ids", ids, "--max-tokens", "48",
       "--json", "--kv-host-bytes", "64K", "--kv-budget", "256K", "--kv-disk-path", disk,
       "--kv-disk-bytes", "4M", "--kv-disk-min-hits", "1"},
      dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["completion_ids"], c["completion_ids"]);
  EXPECT_NE(r.err.find("kv disk tier: " + disk), std::string::npos) << r.err;
  EXPECT_TRUE(std::filesystem::exists(disk + "/kv-g3.blocks"));
}

TEST_F(KvTierFlagsTest, HostTierOutputEqualsTheOracle) {
  const json c = json::parse(readFile(testing::sourceDir() +
                                      "/models/stories260K/greedy_oracle.json").value())["cases"][0];
  std::string ids;
  for (int id : c["prompt_ids"]) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  const CommandResult r = testing::runTandem(
      {"generate", "--model", testing::storiesGguf(), "--prompt-ids", ids, "--max-tokens", "48",
       "--json", "--kv-host-bytes", "8M", "--kv-budget", "256K", "--kv-disk-io", "threads",
       "--kv-disk-queue-depth", "8", "--kv-disk-min-hits", "1"},
      dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["completion_ids"], c["completion_ids"]);
}

TEST_F(KvTierFlagsTest, F16CacheOutputEqualsTheOracle) {
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

TEST_F(KvTierFlagsTest, F16CacheBlocksTakeHalfTheBytes) {
  // stories260K's F32 block: 5 layers x K,V x 16 tokens x 32 values x 4
  // bytes = 20480; 16 KiB holds no F32 block and one F16 block
  expectError({"--kv-cache-dtype", "f32", "--kv-budget", "16K"}, "holds no block of 20480 bytes");
  expectError({"--kv-budget", "16K"}, "holds no block of 20480 bytes");  // auto is f32
  const CommandResult f16 = generate({"--kv-cache-dtype", "f16", "--kv-budget", "16K"});
  ASSERT_EQ(f16.exit_code, 0) << f16.err;
  EXPECT_NE(f16.out.find("Once upon a time"), std::string::npos) << f16.out;
}

TEST_F(KvTierFlagsTest, ACacheTypeNotOfferedIsAClearError) {
  // bf16 blocks are f16 blocks' size: workers' transfers could not tell
  // them apart, so the flag does not offer it
  for (const std::string bad : {"bf16", "q8_0", "fp8"}) {
    expectError({"--kv-cache-dtype", bad}, "--kv-cache-dtype: " + bad + " not in {auto,f32,f16}");
  }
}

}  // namespace
}  // namespace tandem
