#include "formats/gguf_file.h"

#include <cstring>
#include <filesystem>
#include <string>

#include "common/mapped_file.h"
#include "gtest/gtest.h"
#include "tests/test_paths.h"

namespace tandem::model {
namespace {

// appends little-endian encodings to build GGUF files byte by byte.
class Bytes {
 public:
  template <typename T>
  Bytes& pod(T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    s_.append(b, sizeof(T));
    return *this;
  }
  Bytes& str(std::string_view v) {
    pod<uint64_t>(v.size());
    s_.append(v);
    return *this;
  }
  Bytes& pad(size_t align) {
    while (s_.size() % align != 0) s_.push_back('\0');
    return *this;
  }
  const std::string& bytes() const { return s_; }

 private:
  std::string s_;
};

// a valid v3 file: two metadata keys and one 4x2 f32 tensor.
Bytes validFile(uint32_t ggml_type = 0) {
  Bytes b;
  b.pod<uint32_t>(0x46554747).pod<uint32_t>(3).pod<uint64_t>(1).pod<uint64_t>(2);
  b.str("general.architecture").pod<uint32_t>(8).str("llama");
  b.str("tokenizer.ggml.tokens").pod<uint32_t>(9).pod<uint32_t>(8).pod<uint64_t>(2);
  b.str("a").str("bc");
  b.str("w").pod<uint32_t>(2).pod<uint64_t>(4).pod<uint64_t>(2).pod<uint32_t>(ggml_type)
      .pod<uint64_t>(0);
  b.pad(32);
  for (int i = 0; i < 8; ++i) b.pod<float>(static_cast<float>(i));
  return b;
}

class GgufFileTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = tandem::testing::makeTempDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(std::string_view name, std::string_view bytes) {
    std::string path = dir_ + "/" + std::string(name);
    EXPECT_TRUE(writeFile(path, bytes).ok());
    return path;
  }

  std::string dir_;
};

TEST_F(GgufFileTest, ParsesStoriesModelMetadataAndTensors) {
  auto f = GgufFile::open(tandem::testing::storiesGguf());
  ASSERT_TRUE(f.ok()) << f.status();
  const GgufFile& g = **f;
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.tensors().size(), 48u);
  EXPECT_EQ(g.metadata().size(), 19u);
  EXPECT_EQ(g.alignment(), 32u);
  EXPECT_EQ(g.dataStart() % 32, 0u);
  EXPECT_EQ(*g.getString("general.architecture"), "llama");
  EXPECT_EQ(*g.getInt("llama.embedding_length"), 64);
  EXPECT_EQ(*g.getInt("llama.block_count"), 5);
  EXPECT_EQ(*g.getInt("llama.attention.head_count"), 8);
  EXPECT_EQ(*g.getInt("llama.attention.head_count_kv"), 4);
  EXPECT_EQ(g.getStringArray("tokenizer.ggml.tokens")->size(), 512u);
  const GgufTensorInfo* emb = g.findTensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->dtype, DType::kF32);
  EXPECT_EQ(emb->shape, (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(emb->bytes, 512u * 64 * 4);
  const GgufTensorInfo* wk = g.findTensor("blk.0.attn_k.weight");
  ASSERT_NE(wk, nullptr);
  EXPECT_EQ(wk->shape, (std::vector<int64_t>{32, 64}));
  for (const auto& t : g.tensors()) {
    EXPECT_GE(t.offset, g.dataStart()) << t.name;
    EXPECT_LE(t.offset + t.bytes, g.file()->size()) << t.name;
    EXPECT_EQ(t.data, g.file()->data() + t.offset) << t.name;
  }
}

TEST_F(GgufFileTest, ParsesVocabOnlyFileWithStringArrays) {
  auto f = GgufFile::open(tandem::testing::testDataDir() + "/tokenizers/ggml-vocab-llama-spm.gguf");
  ASSERT_TRUE(f.ok()) << f.status();
  const GgufFile& g = **f;
  EXPECT_TRUE(g.tensors().empty());
  EXPECT_EQ(g.metadata().size(), 22u);
  EXPECT_EQ(*g.getString("tokenizer.ggml.model"), "llama");
  auto tokens = g.getStringArray("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok());
  EXPECT_EQ(tokens->size(), 32000u);
  EXPECT_EQ((*tokens)[1], "<s>");
  EXPECT_EQ(g.getFloatArray("tokenizer.ggml.scores")->size(), 32000u);
  EXPECT_EQ(g.getIntArray("tokenizer.ggml.token_type")->size(), 32000u);
  EXPECT_EQ(*g.getInt("tokenizer.ggml.bos_token_id"), 1);
}

TEST_F(GgufFileTest, TypedGettersReportMissingAndMistypedKeys) {
  auto f = GgufFile::open(write("ok.gguf", validFile().bytes()));
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ((*f)->getInt("nope").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ((*f)->getInt("general.architecture").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*f)->getStringArray("tokenizer.ggml.tokens")->at(1), "bc");
  const GgufTensorInfo* w = (*f)->findTensor("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{2, 4}));
  float v[8];
  std::memcpy(v, w->data, sizeof(v));
  EXPECT_EQ(v[7], 7.0f);
}

TEST_F(GgufFileTest, RejectsBadMagicNamingTheFile) {
  std::string bytes = validFile().bytes();
  bytes[0] = 'X';
  std::string path = write("magic.gguf", bytes);
  auto f = GgufFile::open(path);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(f.status().message().find(path), std::string::npos);
  EXPECT_NE(f.status().message().find("magic"), std::string::npos);
}

TEST_F(GgufFileTest, RejectsUnsupportedVersions) {
  for (uint32_t version : {0u, 1u, 4u, 99u}) {
    std::string bytes = validFile().bytes();
    std::memcpy(bytes.data() + 4, &version, 4);
    auto f = GgufFile::open(write("version.gguf", bytes));
    ASSERT_FALSE(f.ok()) << version;
    EXPECT_NE(f.status().message().find("version " + std::to_string(version)),
              std::string::npos) << f.status();
  }
}

TEST_F(GgufFileTest, RejectsEveryTruncationOfAValidFile) {
  std::string bytes = validFile().bytes();
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    auto f = GgufFile::open(write("cut.gguf", bytes.substr(0, cut)));
    EXPECT_FALSE(f.ok()) << "cut at " << cut;
  }
}

TEST_F(GgufFileTest, RejectsTruncationsOfTheStoriesModel) {
  auto whole = MappedFile::open(tandem::testing::storiesGguf());
  ASSERT_TRUE(whole.ok());
  std::string_view bytes = (*whole)->view();
  for (size_t cut : {size_t{3}, size_t{10}, size_t{23}, size_t{24}, size_t{100}, size_t{1000},
                     size_t{5000}, size_t{20000}, bytes.size() / 2, bytes.size() - 1}) {
    auto f = GgufFile::open(write("cut.gguf", bytes.substr(0, cut)));
    EXPECT_FALSE(f.ok()) << "cut at " << cut;
  }
}

TEST_F(GgufFileTest, RejectsAbsurdStringLength) {
  Bytes b;
  b.pod<uint32_t>(0x46554747).pod<uint32_t>(3).pod<uint64_t>(0).pod<uint64_t>(1);
  b.pod<uint64_t>(uint64_t{1} << 62).str("x");
  auto f = GgufFile::open(write("strlen.gguf", b.bytes()));
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("string length"), std::string::npos) << f.status();
}

TEST_F(GgufFileTest, RejectsAbsurdCounts) {
  Bytes tensors;
  tensors.pod<uint32_t>(0x46554747).pod<uint32_t>(3).pod<uint64_t>(~uint64_t{0}).pod<uint64_t>(0);
  EXPECT_FALSE(GgufFile::open(write("t.gguf", tensors.bytes())).ok());
  Bytes kvs;
  kvs.pod<uint32_t>(0x46554747).pod<uint32_t>(3).pod<uint64_t>(0).pod<uint64_t>(uint64_t{1} << 60);
  EXPECT_FALSE(GgufFile::open(write("kv.gguf", kvs.bytes())).ok());
  Bytes array;
  array.pod<uint32_t>(0x46554747).pod<uint32_t>(3).pod<uint64_t>(0).pod<uint64_t>(1);
  array.str("big").pod<uint32_t>(9).pod<uint32_t>(8).pod<uint64_t>(uint64_t{1} << 61);
  auto f = GgufFile::open(write("array.gguf", array.bytes()));
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("big"), std::string::npos) << f.status();
}

TEST_F(GgufFileTest, RejectsUnknownGgmlTypeNamingTensorAndType) {
  auto f = GgufFile::open(write("type.gguf", validFile(/*ggml_type=*/3).bytes()));
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("tensor w"), std::string::npos) << f.status();
  EXPECT_NE(f.status().message().find("type 3"), std::string::npos) << f.status();
}

// a file with one tensor "q" of `rows` rows of `cols` values of a quantized
// ggml type, its data `row_bytes` a row of zeros.
Bytes quantizedFile(uint32_t ggml_type, uint64_t cols, uint64_t rows, size_t row_bytes) {
  Bytes b;
  b.pod<uint32_t>(0x46554747).pod<uint32_t>(3).pod<uint64_t>(1).pod<uint64_t>(0);
  b.str("q").pod<uint32_t>(2).pod<uint64_t>(cols).pod<uint64_t>(rows).pod<uint32_t>(ggml_type)
      .pod<uint64_t>(0);
  b.pad(32);
  for (size_t i = 0; i < rows * row_bytes; ++i) b.pod<uint8_t>(0);
  return b;
}

TEST_F(GgufFileTest, LoadsTheQuantizedTypesOfQ4KMFiles) {
  struct Type {
    uint32_t ggml;
    DType dtype;
    size_t row_bytes;  // of 256 values
  };
  for (Type t : {Type{2, DType::kQ4_0, 8 * 18}, Type{8, DType::kQ8_0, 8 * 34},
                 Type{12, DType::kQ4_K, 144}, Type{14, DType::kQ6_K, 210}}) {
    auto f = GgufFile::open(write("q.gguf", quantizedFile(t.ggml, 256, 3, t.row_bytes).bytes()));
    ASSERT_TRUE(f.ok()) << t.ggml << ": " << f.status();
    const GgufTensorInfo* q = (*f)->findTensor("q");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->dtype, t.dtype);
    EXPECT_EQ(q->bytes, 3 * t.row_bytes);
    EXPECT_EQ(q->shape, (std::vector<int64_t>{3, 256}));
  }
}

TEST_F(GgufFileTest, RejectsQuantizedRowsThatAreNotWholeBlocks) {
  auto f = GgufFile::open(write("q.gguf", quantizedFile(12, 128, 2, 72).bytes()));
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(f.status().message().find("q4_k tensor q"), std::string::npos) << f.status();
  EXPECT_NE(f.status().message().find("multiple of 256"), std::string::npos) << f.status();
  f = GgufFile::open(write("q.gguf", quantizedFile(2, 48, 1, 18).bytes()));
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("multiple of 32"), std::string::npos) << f.status();
}

TEST_F(GgufFileTest, RejectsTensorDataPastTheEnd) {
  std::string bytes = validFile().bytes();
  bytes.resize(bytes.size() - 4);
  auto f = GgufFile::open(write("short.gguf", bytes));
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(f.status().message().find("tensor w"), std::string::npos) << f.status();
}

TEST_F(GgufFileTest, ReportsMissingFileAsNotFound) {
  EXPECT_EQ(GgufFile::open(dir_ + "/absent.gguf").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tandem::model
