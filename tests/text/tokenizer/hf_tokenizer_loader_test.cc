// Loading tokenizer.json: what loads, and the clear errors for what does not.
#include "text/tokenizer/hf_tokenizer_loader.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "tests/test_paths.h"
#include "tests/text/tokenizer/vocab_test_cases.h"

namespace tandem::tokenizer {
namespace {

class HfTokenizerLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = tandem::testing::makeTempDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name, std::ios::binary) << text;
  }

  std::string dir_;
};

// a tiny SentencePiece-style BPE: "a b" merges, byte fallback, BOS template.
constexpr char kTinyTokenizer[] = R"({
  "added_tokens": [{"id": 0, "content": "<s>", "special": true, "lstrip": false,
                    "rstrip": false, "single_word": false, "normalized": false}],
  "normalizer": {"type": "Sequence", "normalizers": [
    {"type": "Prepend", "prepend": "\u2581"},
    {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
  "pre_tokenizer": null,
  "post_processor": {"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
    "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]}}},
  "decoder": {"type": "Sequence", "decoders": [
    {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
    {"type": "ByteFallback"}, {"type": "Fuse"},
    {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
  "model": {"type": "BPE", "byte_fallback": true, "fuse_unk": true, "unk_token": null,
    "vocab": {"<s>": 0, "<0xC3>": 1, "<0xA9>": 2, "\u2581": 3, "a": 4, "b": 5,
              "ab": 6, "\u2581ab": 7},
    "merges": [["a", "b"], "\u2581 ab"]}
})";

TEST_F(HfTokenizerLoaderTest, LoadsATinySentencePieceStyleBpe) {
  write("tokenizer.json", kTinyTokenizer);
  auto tok = loadHfTokenizer(dir_);
  ASSERT_TRUE(tok.ok()) << tok.status();
  EXPECT_EQ((*tok)->kind(), "spm-bpe");
  EXPECT_EQ((*tok)->encode("ab ab", true), (std::vector<TokenId>{0, 7, 7}));
  // "é" is not in the vocabulary: its two bytes
  EXPECT_EQ((*tok)->encode("\xC3\xA9", false), (std::vector<TokenId>{3, 1, 2}));
  EXPECT_EQ((*tok)->decode({0, 7, 3, 1, 2}, true), "ab \xC3\xA9");
  EXPECT_EQ((*tok)->bosId(), 0);
}

TEST_F(HfTokenizerLoaderTest, RejectsAnUnknownModelTypeNamingTheFile) {
  write("tokenizer.json", R"({"model": {"type": "Unigram", "vocab": []}})");
  auto tok = loadHfTokenizer(dir_);
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(tok.status().message().find("tokenizer.json"), std::string::npos) << tok.status();
  EXPECT_NE(tok.status().message().find("Unigram"), std::string::npos) << tok.status();
}

TEST_F(HfTokenizerLoaderTest, RejectsWordPiece) {
  write("tokenizer.json", R"({"model": {"type": "WordPiece", "vocab": {"a": 0}}})");
  auto tok = Tokenizer::load(dir_);
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.status().message().find("WordPiece"), std::string::npos) << tok.status();
}

TEST_F(HfTokenizerLoaderTest, RejectsInvalidJson) {
  write("tokenizer.json", R"({"model": {"type": "BPE", "vocab": {)");
  auto tok = Tokenizer::fromHfDir(dir_);
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(tok.status().message().find("invalid JSON"), std::string::npos) << tok.status();
}

TEST_F(HfTokenizerLoaderTest, RejectsFieldsOfTheWrongType) {
  write("tokenizer.json", R"({"model": {"type": "BPE", "vocab": {"a": "zero"}, "merges": []}})");
  EXPECT_EQ(loadHfTokenizer(dir_).status().code(), absl::StatusCode::kInvalidArgument);
  write("tokenizer.json", R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a z"]}})");
  EXPECT_EQ(loadHfTokenizer(dir_).status().code(), absl::StatusCode::kInvalidArgument);
  write("tokenizer.json", R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": 7}})");
  EXPECT_EQ(loadHfTokenizer(dir_).status().code(), absl::StatusCode::kInvalidArgument);
  write("tokenizer.json", R"([1, 2, 3])");
  EXPECT_EQ(loadHfTokenizer(dir_).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(HfTokenizerLoaderTest, RejectsAPostProcessorTokenOutsideTheVocabulary) {
  // found by fuzz/tokenizer_json_fuzzer.cc: a TemplateProcessing whose BOS id
  // (2) is neither a vocabulary token nor an added one was prepended to every
  // prompt, which the engine then refuses.
  write("tokenizer.json", R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": []},
    "post_processor": {"type": "TemplateProcessing",
      "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
      "special_tokens": {"<s>": {"id": "<s>", "ids": [2], "tokens": ["<s>"]}}}})");
  auto tok = loadHfTokenizer(dir_);
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(tok.status().message().find("post_processor token id 2 is not in the vocabulary"),
            std::string::npos)
      << tok.status();
  write("tokenizer.json", R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
    "post_processor": {"type": "BertProcessing", "cls": ["<s>", -1], "sep": ["</s>", 0]}})");
  EXPECT_FALSE(loadHfTokenizer(dir_).ok());
}

TEST_F(HfTokenizerLoaderTest, ReportsAMissingFile) {
  auto tok = Tokenizer::fromHfDir(dir_);
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(tok.status().message().find("tokenizer.json"), std::string::npos) << tok.status();
  auto missing = Tokenizer::load(dir_ + "/nothing-here.gguf");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tandem::tokenizer
