#include "common/mapped_file.h"

#include <filesystem>

#include "gtest/gtest.h"
#include "tests/test_paths.h"

namespace tandem {
namespace {

class MappedFileTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::makeTempDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(MappedFileTest, MapsWhatWasWritten) {
  std::string path = dir_ + "/a.bin";
  ASSERT_TRUE(writeFile(path, std::string("hello\0world", 11)).ok());
  auto file = MappedFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->size(), 11u);
  EXPECT_EQ((*file)->view(), std::string_view("hello\0world", 11));
  auto text = readFile(path);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->size(), 11u);
}

TEST_F(MappedFileTest, MapsAnEmptyFile) {
  std::string path = dir_ + "/empty";
  ASSERT_TRUE(writeFile(path, "").ok());
  auto file = MappedFile::open(path);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ((*file)->size(), 0u);
}

TEST_F(MappedFileTest, MissingFileIsNotFoundNamingThePath) {
  auto file = MappedFile::open(dir_ + "/nope.gguf");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(file.status().message().find("nope.gguf"), std::string::npos);
}

TEST_F(MappedFileTest, DirectoryIsRejected) {
  auto file = MappedFile::open(dir_);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tandem
