#include "server/model/safetensors_file.h"

#include <cstring>
#include <filesystem>
#include <string>

#include "common/mapped_file.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/model/synth.h"
#include "server/model/weights.h"
#include "tests/test_paths.h"

namespace tandem::model {
namespace {

// a safetensors file from a header JSON and `data_bytes` bytes of data.
std::string makeFile(const std::string& header, size_t data_bytes) {
  std::string s(8, '\0');
  uint64_t len = header.size();
  std::memcpy(s.data(), &len, 8);
  return s + header + std::string(data_bytes, '\0');
}

class SafetensorsFileTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = tandem::testing::makeTempDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& bytes) {
    std::string path = dir_ + "/" + name;
    EXPECT_TRUE(writeFile(path, bytes).ok());
    return path;
  }
  // opens `bytes` and expects an error whose message holds each of `parts`.
  void expectError(const std::string& bytes, std::vector<std::string> parts) {
    std::string path = write("bad.safetensors", bytes);
    auto f = SafetensorsFile::open(path);
    ASSERT_FALSE(f.ok());
    parts.push_back(path);
    for (const auto& p : parts) {
      EXPECT_NE(f.status().message().find(p), std::string::npos) << f.status() << " lacks " << p;
    }
  }

  std::string dir_;
};

TEST_F(SafetensorsFileTest, ReadsTheStoriesModelZeroCopy) {
  auto f = SafetensorsFile::open(tandem::testing::storiesHfDir() + "/model.safetensors");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ((*f)->tensors().size(), 47u);
  const SafetensorsTensor& emb = (*f)->tensors().at("model.embed_tokens.weight");
  EXPECT_EQ(emb.shape, (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(emb.bytes, 512u * 64 * 4);
  EXPECT_GE(emb.data, (*f)->file()->data());
}

TEST_F(SafetensorsFileTest, RejectsTruncatedFiles) {
  expectError("abc", {"truncated"});
  std::string good = makeFile(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8);
  for (size_t cut : {size_t{0}, size_t{7}, size_t{8}, size_t{20}, good.size() - 1}) {
    std::string path = write("cut.safetensors", good.substr(0, cut));
    EXPECT_FALSE(SafetensorsFile::open(path).ok()) << cut;
  }
}

TEST_F(SafetensorsFileTest, RejectsAHeaderLengthLargerThanTheFile) {
  std::string s = makeFile("{}", 0);
  uint64_t len = 1000;
  std::memcpy(s.data(), &len, 8);
  expectError(s, {"header length 1000"});
}

TEST_F(SafetensorsFileTest, RejectsDataOffsetsPastTheEnd) {
  expectError(makeFile(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8),
              {"tensor w", "data_offsets"});
}

TEST_F(SafetensorsFileTest, RejectsBytesThatDisagreeWithTheShape) {
  expectError(makeFile(R"({"w":{"dtype":"F16","shape":[4],"data_offsets":[0,16]}})", 16),
              {"tensor w", "need 8"});
}

TEST_F(SafetensorsFileTest, RejectsUnknownDtypes) {
  for (const char* dtype : {"F8_E4M3", "I2"}) {
    expectError(makeFile(std::string(R"({"w":{"dtype":")") + dtype +
                             R"(","shape":[4],"data_offsets":[0,4]}})", 4),
                {"tensor w", dtype});
  }
}

TEST_F(SafetensorsFileTest, RejectsInvalidHeaderJson) {
  expectError(makeFile(R"({"w":{"dtype":"F32",)", 0), {"invalid JSON"});
  expectError(makeFile(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4),
              {"tensor w"});
}

class ModelWeightsErrorsTest : public SafetensorsFileTest {
 protected:
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
    ASSERT_TRUE(writeFile(path, makeFile(h.dump(), 0) + data).ok());
  }
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
