// Path flags through the real binary: a missing model or file is one clear
// line naming the flag, before `tandem serve` starts a router or a worker
// (and before `tandem router` / `tandem worker` listen); a directory that is
// not a model names the models inside it.
#include <chrono>
#include <filesystem>

#include "gtest/gtest.h"
#include "tests/cli/cli_runner.h"
#include "tests/test_paths.h"

namespace tandem {
namespace {

using testing::CommandResult;

class PathFlagsTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::makeTempDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // runs tandem ARGS; expects exit code 1 with exactly `line` on stderr.
  void expectOneLineError(const std::vector<std::string>& args, const std::string& line) {
    const auto start = std::chrono::steady_clock::now();
    const CommandResult r = testing::runTandem(args, dir_);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.err, "error: " + line + "\n");
    // nothing was started: no child's output, no waiting on one.
    EXPECT_EQ(r.err.find("[router]"), std::string::npos);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  }
  std::string dir_;
};

TEST_F(PathFlagsTest, ServeWithAMissingModelFailsAtOnceWithOneLine) {
  expectOneLineError({"serve", "--model", "/missing.gguf"},
                     "--model /missing.gguf: no such model file or directory");
  expectOneLineError({"serve", "--model", "/missing.gguf", "--decode-workers", "0", "--prefill-workers", "0"},
                     "--model /missing.gguf: no such model file or directory");
}

TEST_F(PathFlagsTest, EveryFileFlagIsCheckedBeforeAnythingStarts) {
  const std::string model = testing::storiesGguf();
  expectOneLineError({"serve", "--model", model, "--tls-cert", dir_ + "/cert.pem", "--tls-key", model},
                     "--tls-cert " + dir_ + "/cert.pem: no such file");
  expectOneLineError({"serve", "--api-key-file", dir_}, "--api-key-file " + dir_ + ": is a directory, not a file");
  expectOneLineError({"router", "--chat-template", dir_ + "/t.jinja"}, "--chat-template " + dir_ + "/t.jinja: no such file");
  expectOneLineError({"worker", "--model", dir_ + "/m.gguf"}, "--model " + dir_ + "/m.gguf: no such model file or directory");
  expectOneLineError({"worker", "--cluster-secret-file", dir_ + "/s"}, "--cluster-secret-file " + dir_ + "/s: no such file");
  expectOneLineError({"generate", "--model", model + ".missing", "--prompt", "x"},
                     "--model " + model + ".missing: no such model file or directory");
}

TEST_F(PathFlagsTest, ADirectoryThatIsNoModelNamesTheModelsInIt) {
  const std::string stories = testing::sourceDir() + "/models/stories260K";
  expectOneLineError({"serve", "--model", stories},
                     "--model " + stories + ": a directory without config.json is not an HF model; "
                     "models in it: gguf/stories260K-q8_0.gguf, gguf/stories260K.gguf, hf/");
  const CommandResult inspect = testing::runTandem({"model", "inspect", stories}, dir_);
  EXPECT_EQ(inspect.exit_code, 1);
  EXPECT_NE(inspect.err.find("models in it: gguf/stories260K-q8_0.gguf"), std::string::npos) << inspect.err;
  // what the README names works
  EXPECT_EQ(testing::runTandem({"model", "inspect", stories + "/hf"}, dir_).exit_code, 0);
  EXPECT_EQ(testing::runTandem({"model", "inspect", stories + "/gguf/stories260K.gguf"}, dir_).exit_code, 0);
  // a file that is no GGUF
  expectOneLineError({"serve", "--model", stories + "/README.md"},
                     "--model " + stories + "/README.md: not a GGUF file (a model is a .gguf file or "
                     "an HF directory with config.json)");
}

}  // namespace
}  // namespace tandem
