// Byte-level BPE from HF tokenizer.json (Llama 3, Qwen3) against llama.cpp's
// vectors, which were made with the HF tokenizers of those models.
#include "text/tokenizer/bpe_tokenizer.h"

#include <chrono>

#include <gtest/gtest.h>

#include "tests/test_paths.h"
#include "tests/text/tokenizer/vocab_test_cases.h"

namespace tandem::tokenizer {
namespace {

using testing::readVocabCases;
using testing::VocabCase;

class BpeTokenizerTest : public ::testing::Test {
 protected:
  // both tokenizers load once per process; a test fails (rather than
  // crashes) when the fetched files are missing.
  void SetUp() override {
    load(llama3_, "llama3");
    load(qwen3_, "qwen3");
    ASSERT_NE(llama3_, nullptr) << "run tests/fetch_test_data.sh " << tandem::testing::fetchedDataDir();
    ASSERT_NE(qwen3_, nullptr) << "run tests/fetch_test_data.sh " << tandem::testing::fetchedDataDir();
  }
  static const Tokenizer& llama3() { return *llama3_; }
  static const Tokenizer& qwen3() { return *qwen3_; }

  static void expectVectors(const Tokenizer& tok, const std::string& vocab) {
    std::vector<VocabCase> cases =
        readVocabCases(tandem::testing::testDataDir() + "/tokenizers/ggml-vocab-" + vocab + ".gguf");
    ASSERT_EQ(cases.size(), 47u);
    for (const VocabCase& c : cases) {
      EXPECT_EQ(tok.encode(c.text, /*add_special=*/false), c.ids) << "input: \"" << c.text << "\"";
      EXPECT_EQ(tok.decode(c.ids, /*skip_special=*/false), c.text);
    }
  }

 private:
  static void load(TokenizerPtr& slot, const std::string& name) {
    if (slot != nullptr) return;
    auto tok = Tokenizer::fromHfDir(tandem::testing::fetchedDataDir() + "/" + name);
    EXPECT_TRUE(tok.ok()) << tok.status();
    if (tok.ok()) slot = std::move(*tok);
  }
  static TokenizerPtr llama3_;
  static TokenizerPtr qwen3_;
};

TokenizerPtr BpeTokenizerTest::llama3_;
TokenizerPtr BpeTokenizerTest::qwen3_;

TEST_F(BpeTokenizerTest, Llama3MatchesEveryLlamaCppVector) { expectVectors(llama3(), "llama-bpe"); }

TEST_F(BpeTokenizerTest, Qwen3MatchesEveryLlamaCppVector) { expectVectors(qwen3(), "qwen2"); }

TEST_F(BpeTokenizerTest, Llama3AddsBeginOfTextOnlyWithSpecialTokens) {
  std::vector<TokenId> with = llama3().encode("Hello world", true);
  ASSERT_FALSE(with.empty());
  EXPECT_EQ(with[0], 128000);
  EXPECT_EQ(std::vector<TokenId>(with.begin() + 1, with.end()), llama3().encode("Hello world", false));
  EXPECT_EQ(llama3().bosId(), 128000);
  EXPECT_EQ(llama3().eosId(), 128001);
  EXPECT_EQ(llama3().kind(), "bpe-byte-level");
  EXPECT_EQ(llama3().vocabSize(), 128256);
}

TEST_F(BpeTokenizerTest, Qwen3AddsNoBeginningToken) {
  EXPECT_EQ(qwen3().encode("Hello world", true), qwen3().encode("Hello world", false));
  EXPECT_EQ(qwen3().bosId(), std::nullopt);
  EXPECT_EQ(qwen3().eosId(), 151645);  // <|im_end|>
}

TEST_F(BpeTokenizerTest, SpecialTokensInTheTextAreSingleTokens) {
  std::vector<TokenId> ids = qwen3().encode("<|im_start|>user\nhi<|im_end|>", false);
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids.front(), 151644);
  EXPECT_EQ(ids.back(), 151645);
  EXPECT_TRUE(qwen3().isSpecial(151644));
  EXPECT_EQ(qwen3().tokenToId("<|im_start|>"), 151644);
  EXPECT_EQ(qwen3().decode(ids, false), "<|im_start|>user\nhi<|im_end|>");
  EXPECT_EQ(qwen3().decode(ids, true), "user\nhi");
  EXPECT_EQ(llama3().encode("<|eot_id|>", false), std::vector<TokenId>{128009});
}

TEST_F(BpeTokenizerTest, QwenNormalizesToNfc) {
  // "é" written as e + combining acute is the same token as the composed one
  EXPECT_EQ(qwen3().encode("caf\x65\xCC\x81", false), qwen3().encode("caf\xC3\xA9", false));
}

TEST_F(BpeTokenizerTest, TokenizesKilobytesInMilliseconds) {
  std::string text;
  for (int i = 0; text.size() < 64 * 1024; ++i) {
    text += "The quick brown fox " + std::to_string(i) + " jumps over the lazy dog's back! ";
    text += "Ünïcödé ünd 中文字符 mixed in, \t\n";
  }
  auto start = std::chrono::steady_clock::now();
  std::vector<TokenId> ids = llama3().encode(text, false);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(llama3().decode(ids, false), text);
  // 64 KiB; generous for a loaded debug build on a shared machine
  EXPECT_LT(ms, 2000.0);
  std::printf("llama3: %zu bytes -> %zu tokens in %.1f ms\n", text.size(), ids.size(), ms);
}

TEST_F(BpeTokenizerTest, LoadsTheQwenTokenizerQuickly) {
  auto start = std::chrono::steady_clock::now();
  auto tok = Tokenizer::fromHfDir(tandem::testing::fetchedDataDir() + "/qwen3");
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(tok.ok()) << tok.status();
  std::printf("qwen3 tokenizer.json loaded in %.0f ms\n", ms);
  EXPECT_LT(ms, 5000.0);
}

}  // namespace
}  // namespace tandem::tokenizer
