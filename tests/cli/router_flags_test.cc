// `tandem router --prefill-profile FILE` through the real binary: a shipped
// worker profile is taken (the router gets as far as waiting for workers),
// a missing or malformed one is a clear error before the router serves.
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/process/child_process.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_runner.h"
#include "tests/test_paths.h"

namespace tandem {
namespace {

using testing::CommandResult;

class RouterFlagsTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::makeTempDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // the router on free ports with the given profile.
  std::vector<std::string> routerArgs(const std::string& profile) {
    return {"router", "--http-port", "0", "--grpc-port", "0", "--internal-port", "0", "--host", "127.0.0.1",
            "--prefill-profile", profile};
  }
  std::string dir_;
};

TEST_F(RouterFlagsTest, AShippedProfileIsTakenAndTheRouterWaitsForWorkers) {
  std::vector<std::string> argv = routerArgs(testing::sourceDir() + "/planner/profiles/mi300x-llama3-8b.json");
  argv.insert(argv.begin(), testing::tandemBinary());
  absl::StatusOr<process::ChildProcessPtr> child = process::ChildProcess::spawn({.argv = argv});
  ASSERT_TRUE(child.ok()) << child.status();
  std::string log;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (log.find("waiting for workers") == std::string::npos && !(*child)->reap() &&
         std::chrono::steady_clock::now() < deadline) {
    for (const std::string& line : (*child)->readLines()) log += line + "\n";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_NE(log.find("waiting for workers"), std::string::npos) << log;
  (*child)->signal(SIGTERM);
  const auto stop_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!(*child)->reap() && std::chrono::steady_clock::now() < stop_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE((*child)->exitStatus().clean()) << (*child)->exitStatus().describe() << "\n" << log;
}

TEST_F(RouterFlagsTest, AMissingProfileIsAClearError) {
  const CommandResult r = testing::runTandem(routerArgs(dir_ + "/nope.json"), dir_);
  EXPECT_NE(r.exit_code, 0);
  // checked with every path flag before the router starts (cli/path_flags.h)
  EXPECT_EQ(r.err, "error: --prefill-profile " + dir_ + "/nope.json: no such file\n") << r.err;
}

TEST_F(RouterFlagsTest, AMalformedProfileIsAClearError) {
  const std::string path = dir_ + "/bad.json";
  std::ofstream(path) << "{\"prefill\": [";
  const CommandResult r = testing::runTandem(routerArgs(path), dir_);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(path + ": not valid JSON"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tandem
