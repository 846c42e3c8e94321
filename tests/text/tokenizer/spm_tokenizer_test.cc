// SentencePiece vocabularies from GGUF (llama.cpp's llm_tokenizer_spm)
// against llama.cpp's llama-spm vectors and the stories260K oracle.
#include "text/tokenizer/spm_tokenizer.h"

#include <gtest/gtest.h>

#include "formats/gguf_file.h"
#include "nlohmann/json.hpp"
#include "tests/test_paths.h"
#include "tests/text/tokenizer/vocab_test_cases.h"

namespace tandem::tokenizer {
namespace {

using testing::readAll;
using testing::readVocabCases;
using testing::VocabCase;

TokenizerPtr loadGguf(const std::string& path) {
  auto gguf = model::GgufFile::open(path);
  EXPECT_TRUE(gguf.ok()) << gguf.status();
  if (!gguf.ok()) return nullptr;
  auto tok = Tokenizer::fromGguf(**gguf);
  EXPECT_TRUE(tok.ok()) << tok.status();
  return tok.ok() ? std::move(*tok) : nullptr;
}

class SpmTokenizerTest : public ::testing::Test {};

TEST_F(SpmTokenizerTest, LlamaSpmMatchesEveryLlamaCppVector) {
  std::string base = tandem::testing::testDataDir() + "/tokenizers/ggml-vocab-llama-spm.gguf";
  TokenizerPtr tok = loadGguf(base);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->kind(), "spm-bpe");
  EXPECT_EQ(tok->bosId(), 1);
  EXPECT_EQ(tok->eosId(), 2);
  std::vector<VocabCase> cases = readVocabCases(base);
  ASSERT_EQ(cases.size(), 47u);
  for (const VocabCase& c : cases) {
    EXPECT_EQ(tok->encode(c.text, false), c.ids) << "input: \"" << c.text << "\"";
    EXPECT_EQ(tok->decode(c.ids, false), c.text);
  }
}

TEST_F(SpmTokenizerTest, LlamaSpmAddsBosAndSpellsUnknownCharactersAsBytes) {
  TokenizerPtr tok = loadGguf(tandem::testing::testDataDir() +
                              "/tokenizers/ggml-vocab-llama-spm.gguf");
  ASSERT_NE(tok, nullptr);
  std::vector<TokenId> ids = tok->encode("Hello world", true);
  EXPECT_EQ(ids, (std::vector<TokenId>{1, 15043, 3186}));
  EXPECT_EQ(tok->decode(ids, true), "Hello world");
  EXPECT_EQ(tok->decode(ids, false), "<s> Hello world");
  // U+1F999 is not in the vocabulary: four byte tokens
  EXPECT_EQ(tok->encode("\xF0\x9F\xA6\x99", false),
            (std::vector<TokenId>{29871, 243, 162, 169, 156}));
  EXPECT_EQ(tok->tokenBytes(243), "\xF0");
}

class StoriesTokenizerTest : public ::testing::TestWithParam<bool> {
 protected:
  TokenizerPtr load() {
    if (GetParam()) return loadGguf(tandem::testing::storiesGguf());
    auto tok = Tokenizer::fromHfDir(tandem::testing::storiesHfDir());
    EXPECT_TRUE(tok.ok()) << tok.status();
    return tok.ok() ? std::move(*tok) : nullptr;
  }
  static nlohmann::json oracle() {
    return nlohmann::json::parse(
        readAll(tandem::testing::sourceDir() + "/models/stories260K/greedy_oracle.json"));
  }
};

TEST_P(StoriesTokenizerTest, EncodesEveryOraclePromptWithBos) {
  TokenizerPtr tok = load();
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->vocabSize(), 512);
  EXPECT_EQ(tok->bosId(), 1);
  EXPECT_EQ(tok->eosId(), 2);
  nlohmann::json cases = oracle()["cases"];
  ASSERT_EQ(cases.size(), 8u);
  for (const auto& c : cases) {
    std::string prompt = c["prompt"];
    EXPECT_EQ(tok->encode(prompt, true), c["prompt_ids"].get<std::vector<TokenId>>()) << prompt;
  }
}

TEST_P(StoriesTokenizerTest, DecodesEveryOracleCompletion) {
  TokenizerPtr tok = load();
  ASSERT_NE(tok, nullptr);
  // a local: a range-for over a member of a temporary would dangle.
  const nlohmann::json cases = oracle()["cases"];
  ASSERT_EQ(cases.size(), 8u);
  for (const auto& c : cases) {
    std::string prompt = c["prompt"], completion = c["completion_text"];
    auto prompt_ids = c["prompt_ids"].get<std::vector<TokenId>>();
    auto completion_ids = c["completion_ids"].get<std::vector<TokenId>>();
    // the oracle's text continues the prompt: its leading space is kept, so
    // it is the completion's token bytes, not decode() of it alone (which,
    // like HF, drops the first token's space).
    std::string continued;
    for (TokenId id : completion_ids) continued += tok->tokenBytes(id);
    EXPECT_EQ(continued, completion);
    std::vector<TokenId> all = prompt_ids;
    all.insert(all.end(), completion_ids.begin(), completion_ids.end());
    EXPECT_EQ(tok->decode(all, true), prompt + completion);
    std::string alone = completion[0] == ' ' ? completion.substr(1) : completion;
    EXPECT_EQ(tok->decode(completion_ids, true), alone);
  }
}

INSTANTIATE_TEST_SUITE_P(HfAndGguf, StoriesTokenizerTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Gguf" : "HfDir"; });

}  // namespace
}  // namespace tandem::tokenizer
