#include "formats/safetensors_file.h"

#include <cstring>
#include <filesystem>
#include <string>

#include "common/mapped_file.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/formats/safetensors_bytes.h"
#include "tests/test_paths.h"

namespace tandem::model {
namespace {

using tandem::testing::safetensorsBytes;

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
  std::string good = safetensorsBytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8);
  for (size_t cut : {size_t{0}, size_t{7}, size_t{8}, size_t{20}, good.size() - 1}) {
    std::string path = write("cut.safetensors", good.substr(0, cut));
    EXPECT_FALSE(SafetensorsFile::open(path).ok()) << cut;
  }
}

TEST_F(SafetensorsFileTest, RejectsAHeaderLengthLargerThanTheFile) {
  std::string s = safetensorsBytes("{}", 0);
  uint64_t len = 1000;
  std::memcpy(s.data(), &len, 8);
  expectError(s, {"header length 1000"});
}

TEST_F(SafetensorsFileTest, RejectsDataOffsetsPastTheEnd) {
  expectError(safetensorsBytes(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8),
              {"tensor w", "data_offsets"});
}

TEST_F(SafetensorsFileTest, RejectsBytesThatDisagreeWithTheShape) {
  expectError(safetensorsBytes(R"({"w":{"dtype":"F16","shape":[4],"data_offsets":[0,16]}})", 16),
              {"tensor w", "need 8"});
}

TEST_F(SafetensorsFileTest, RejectsUnknownDtypes) {
  for (const char* dtype : {"F8_E4M3", "I2"}) {
    expectError(safetensorsBytes(std::string(R"({"w":{"dtype":")") + dtype +
                             R"(","shape":[4],"data_offsets":[0,4]}})", 4),
                {"tensor w", dtype});
  }
}

TEST_F(SafetensorsFileTest, RejectsInvalidHeaderJson) {
  expectError(safetensorsBytes(R"({"w":{"dtype":"F32",)", 0), {"invalid JSON"});
  expectError(safetensorsBytes(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4),
              {"tensor w"});
}

}  // namespace
}  // namespace tandem::model
