// --backend and --device through the real tandem binary: cpu is the default
// and gives the oracle's tokens, a name that is no backend is a clear error,
// and --backend hip is one clear error on every engine command when the
// build has no hip backend (or, in a GPU build on a machine without a GPU,
// the runtime's word that there is no device).
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

constexpr const char* kNotBuiltIn =
    "this tandem was built without the hip backend; rebuild with -DTANDEM_HIP=ON (ROCm) or "
    "-DTANDEM_CUDA=ON (NVIDIA)";

class BackendFlagsTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::makeTempDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  CommandResult run(std::vector<std::string> args) { return testing::runTandem(args, dir_); }
  // the error every engine command gives for --backend hip on this build.
  static std::string hipError() {
#if TANDEM_TEST_HIP_BUILT_IN
    return "hip backend: no GPU device";
#else
    return kNotBuiltIn;
#endif
  }
  std::string dir_;
};

TEST_F(BackendFlagsTest, GenerateOnTheCpuBackendEqualsTheOracleWithAndWithoutTheFlag) {
  const json c = json::parse(readFile(testing::sourceDir() +
                                      "/models/stories260K/greedy_oracle.json").value())["cases"][0];
  std::string ids;
  for (int id : c["prompt_ids"]) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{}, std::vector<std::string>{"--backend", "cpu", "--device", "0"}}) {
    std::vector<std::string> args = {"generate", "--model", testing::storiesGguf(), "--prompt-ids",
                                     ids, "--max-tokens", "48", "--json"};
    args.insert(args.end(), flags.begin(), flags.end());
    const CommandResult r = run(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json::parse(r.out)["completion_ids"], c["completion_ids"]);
  }
}

TEST_F(BackendFlagsTest, ANameThatIsNoBackendOrANegativeDeviceIsAClearError) {
  CommandResult r = run({"generate", "--model", testing::storiesGguf(), "--prompt", "hi",
                         "--backend", "cuda"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--backend: 'cuda' is not a backend (cpu or hip)"), std::string::npos)
      << r.err;
  r = run({"generate", "--model", testing::storiesGguf(), "--prompt", "hi", "--device", "-1"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--device"), std::string::npos) << r.err;
}

TEST_F(BackendFlagsTest, HipWithoutTheBackendOrADeviceIsOneClearErrorOnEveryEngineCommand) {
  const std::string model = testing::storiesGguf();
  for (const std::vector<std::string>& args : {
           std::vector<std::string>{"generate", "--model", model, "--prompt", "hi", "--backend",
                                    "hip"},
           std::vector<std::string>{"worker", "--model", model, "--metrics-port", "-1", "--backend", "hip",
                                    "--device", "0"},
           std::vector<std::string>{"serve", "--model", model, "--decode-workers", "0", "--prefill-workers", "0", "--http-port", "0", "--grpc-port",
                                    "0", "--backend", "hip"},
       }) {
    const CommandResult r = run(args);
    EXPECT_NE(r.exit_code, 0) << args[0];
    EXPECT_NE(r.err.find(hipError()), std::string::npos) << args[0] << ": " << r.err;
  }
}

}  // namespace
}  // namespace tandem
