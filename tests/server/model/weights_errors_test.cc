#include "server/model/weights.h"

#include <filesystem>
#include <functional>
#include <string>

#include "common/mapped_file.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/model/synth.h"
#include "tests/formats/safetensors_bytes.h"
#include "tests/test_paths.h"

namespace tandem::model {
namespace {

using tandem::testing::safetensorsBytes;

// model loading errors on a synthesized model whose safetensors header is
// edited, so each error names the file and the tensor.
class ModelWeightsErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = tandem::testing::makeTempDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // a small synthesized HF model in dir_/m.
  std::string synth() {
    SynthOptions o;
    o.out = dir_ + "/m";
    o.shape = *parseShape("dim=32,layers=1,heads=2,ffn=64,vocab=64");
    EXPECT_TRUE(writeSynthModel(o).ok());
    return o.out;
  }
  // rewrites the header of m/model.safetensors through `edit`.
  void editHeader(const std::string& dir, const std::function<void(nlohmann::json&)>& edit) {
    std::string path = dir + "/model.safetensors";
    auto read = readFile(path);
    ASSERT_TRUE(read.ok()) << read.status();
    std::string bytes = *std::move(read);
    ASSERT_GE(bytes.size(), 8u);
    uint64_t len = 0;  // little-endian
    for (int i = 7; i >= 0; --i) len = len << 8 | static_cast<uint8_t>(bytes[i]);
    nlohmann::json h = nlohmann::json::parse(bytes.substr(8, len));
    edit(h);
    std::string data = bytes.substr(8 + len);
    ASSERT_TRUE(writeFile(path, safetensorsBytes(h.dump(), 0) + data).ok());
  }

  std::string dir_;
};

TEST_F(ModelWeightsErrorsTest, ReportsAMissingTensorWithFileAndName) {
  std::string dir = synth();
  editHeader(dir, [](nlohmann::json& h) { h.erase("model.layers.0.mlp.up_proj.weight"); });
  auto w = ModelWeights::load(dir);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("model.safetensors"), std::string::npos) << w.status();
  EXPECT_NE(w.status().message().find("missing tensor model.layers.0.mlp.up_proj.weight"),
            std::string::npos) << w.status();
}

TEST_F(ModelWeightsErrorsTest, ReportsAWrongShapeWithExpectedAndActual) {
  std::string dir = synth();
  editHeader(dir, [](nlohmann::json& h) {
    h["model.layers.0.mlp.up_proj.weight"]["shape"] = {32, 64};
  });
  auto w = ModelWeights::load(dir);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("model.layers.0.mlp.up_proj.weight has shape [32, 64], "
                                      "expected [64, 32]"),
            std::string::npos) << w.status();
}

TEST_F(ModelWeightsErrorsTest, ReportsAnUnknownArchitecture) {
  std::string dir = synth();
  ASSERT_TRUE(writeFile(dir + "/config.json",
                        R"({"model_type":"gpt_neox","architectures":["GPTNeoXForCausalLM"]})")
                  .ok());
  auto w = ModelWeights::load(dir);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("unsupported architecture \"gpt_neox\""), std::string::npos)
      << w.status();
  EXPECT_NE(w.status().message().find("config.json"), std::string::npos) << w.status();
}

TEST_F(ModelWeightsErrorsTest, ReportsAMissingModelDirectory) {
  EXPECT_EQ(ModelWeights::load(dir_ + "/nothing").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tandem::model
