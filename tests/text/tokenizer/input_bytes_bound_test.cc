// Tokenizer::maxInputBytesPerToken: the bound that lets the router refuse a
// prompt by its length before tokenizing it. It must hold for every
// tokenizer tandem loads (checked here on texts built to come near it), and
// be 0 for every configuration in which many input bytes can make one token
// or none.
#include <algorithm>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "text/tokenizer/hf_tokenizer_loader.h"
#include "text/tokenizer/text_util.h"
#include "text/tokenizer/tokenizer.h"
#include "tests/test_paths.h"

namespace tandem::tokenizer {
namespace {

size_t atLeastTokens(size_t bytes, size_t per_token) { return (bytes + per_token - 1) / per_token; }

// texts that come near the bound: runs of the longest tokens' own text,
// random sequences of token texts (what merges most), random bytes and
// random code points.
std::vector<std::string> probeTexts(const Tokenizer& tok) {
  std::vector<std::string> texts;
  std::vector<std::pair<size_t, TokenId>> longest;
  for (TokenId id = 0; id < tok.vocabSize(); ++id) longest.emplace_back(tok.tokenBytes(id).size(), id);
  std::sort(longest.rbegin(), longest.rend());
  for (size_t i = 0; i < std::min<size_t>(32, longest.size()); ++i) {
    std::string piece = tok.tokenBytes(longest[i].second);
    std::string run;
    for (int k = 0; k < 40; ++k) run += piece;
    texts.push_back(run);
  }
  std::mt19937 rng(36);
  std::uniform_int_distribution<TokenId> any_token(0, tok.vocabSize() - 1);
  for (int t = 0; t < 200; ++t) {
    std::string text;
    for (int k = 0; k < 64; ++k) text += tok.tokenBytes(any_token(rng));
    texts.push_back(text);
  }
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<uint32_t> code_point(1, 0x10FFFF);
  for (int t = 0; t < 50; ++t) {
    std::string bytes, chars;
    for (int k = 0; k < 256; ++k) bytes += static_cast<char>(byte(rng));
    for (int k = 0; k < 128; ++k) {
      uint32_t cp = code_point(rng);
      if (cp < 0xD800 || cp > 0xDFFF) appendUtf8(cp, &chars);
    }
    texts.push_back(bytes);
    texts.push_back(chars);
  }
  texts.push_back(std::string(4096, ' '));
  texts.push_back(std::string(4096, 'a'));
  return texts;
}

void expectBoundHolds(const Tokenizer& tok, const std::string& name) {
  const size_t per_token = tok.maxInputBytesPerToken();
  ASSERT_GT(per_token, 0u) << name << " has no bound";
  std::cout << name << ": at most " << per_token << " bytes a token\n";
  size_t tightest = 0;  // the most bytes per token seen, in percent of the bound
  for (const std::string& text : probeTexts(tok)) {
    for (bool special : {false, true}) {
      const size_t tokens = tok.encode(text, special).size();
      ASSERT_GE(tokens, atLeastTokens(text.size(), per_token))
          << name << ": " << text.size() << " bytes made " << tokens << " tokens, bound "
          << per_token << " bytes a token; text starts \"" << text.substr(0, 40) << "\"";
      if (tokens > 0) tightest = std::max(tightest, 100 * text.size() / (tokens * per_token));
    }
  }
  // the probes reach the bound's order of magnitude, or the check says
  // little (a normalizer's shrink factor, 4 for qwen3's NFC, keeps texts
  // without shrinking characters at a quarter of it).
  EXPECT_GE(tightest, 10u) << name << ": the probes stay far below the bound " << per_token;
}

TEST(TokenizerInputBoundTest, HoldsForTheEmbeddedModelsGgufVocabulary) {
  auto tok = Tokenizer::load(tandem::testing::storiesGguf());
  ASSERT_TRUE(tok.ok()) << tok.status();
  expectBoundHolds(**tok, "stories260K.gguf (spm)");
}

TEST(TokenizerInputBoundTest, HoldsForTheEmbeddedModelsHfTokenizerWithByteFallback) {
  auto tok = Tokenizer::fromHfDir(tandem::testing::storiesHfDir());
  ASSERT_TRUE(tok.ok()) << tok.status();
  expectBoundHolds(**tok, "stories260K hf (bpe, byte fallback, fused unk)");
}

TEST(TokenizerInputBoundTest, HoldsForLlamaSpmGgufVocabulary) {
  auto tok = Tokenizer::load(tandem::testing::testDataDir() + "/tokenizers/ggml-vocab-llama-spm.gguf");
  ASSERT_TRUE(tok.ok()) << tok.status();
  expectBoundHolds(**tok, "llama-spm.gguf");
}

TEST(TokenizerInputBoundTest, HoldsForByteLevelLlama3AndNfcQwen3) {
  for (const char* name : {"llama3", "qwen3"}) {
    auto tok = Tokenizer::fromHfDir(tandem::testing::fetchedDataDir() + "/" + name);
    ASSERT_TRUE(tok.ok()) << "run tests/fetch_test_data.sh: " << tok.status();
    expectBoundHolds(**tok, name);
  }
}

// a tokenizer.json around `normalizer`, `pre_tokenizer`, the model's
// options and one added token's flags: vocabulary a, b, ab, <unk>, <0x00>.
std::string tinyTokenizer(const std::string& normalizer, const std::string& pre_tokenizer,
                          const std::string& model_options, const std::string& added_flags) {
  return R"({"added_tokens": [{"id": 5, "content": "<sep>", "special": true)" + added_flags +
         R"(}], "normalizer": )" + normalizer + R"(, "pre_tokenizer": )" + pre_tokenizer +
         R"(, "decoder": null, "model": {"type": "BPE", "unk_token": "<unk>")" + model_options +
         R"(, "vocab": {"a": 0, "b": 1, "ab": 2, "<unk>": 3, "<0x00>": 4}, "merges": ["a b"]}})";
}

size_t boundOf(const std::string& json) {
  auto tok = parseHfTokenizer(json, "", "tiny");
  EXPECT_TRUE(tok.ok()) << tok.status();
  return tok.ok() ? (*tok)->maxInputBytesPerToken() : 99;
}

TEST(TokenizerInputBoundTest, IsNoneWhereBytesCanVanishOrFuse) {
  // the baseline: the longest token, "<0x00>" (an unknown character is one
  // <unk>, up to 4 bytes).
  EXPECT_EQ(boundOf(tinyTokenizer("null", "null", "", "")), 6u);
  // Strip drops any run of spaces at the ends.
  EXPECT_EQ(boundOf(tinyTokenizer(R"({"type": "Strip", "strip_left": true, "strip_right": true})",
                                  "null", "", "")),
            0u);
  // a Replace that deletes, and a regex Replace (a match of any length).
  EXPECT_EQ(boundOf(tinyTokenizer(R"({"type": "Replace", "pattern": {"String": "a"}, "content": ""})",
                                  "null", "", "")),
            0u);
  EXPECT_EQ(boundOf(tinyTokenizer(R"({"type": "Replace", "pattern": {"Regex": "a+"}, "content": "a"})",
                                  "null", "", "")),
            0u);
  // a Split that removes what it matches.
  EXPECT_EQ(boundOf(tinyTokenizer("null", R"({"type": "Split", "pattern": {"String": " "},
                                              "behavior": "Removed", "invert": false})",
                                  "", "")),
            0u);
  // unknown characters fused into one token.
  EXPECT_EQ(boundOf(tinyTokenizer("null", "null", R"(, "fuse_unk": true)", "")), 0u);
  // an added token that swallows the spaces beside it.
  EXPECT_EQ(boundOf(tinyTokenizer("null", "null", "", R"(, "lstrip": true)")), 0u);
}

TEST(TokenizerInputBoundTest, UnboundedConfigurationsReallyFoldManyBytesIntoFewTokens) {
  // what the 0s above protect against: 4096 bytes, at most a few tokens.
  auto fused = parseHfTokenizer(tinyTokenizer("null", "null", R"(, "fuse_unk": true)", ""), "", "t");
  ASSERT_TRUE(fused.ok()) << fused.status();
  EXPECT_EQ((*fused)->encode(std::string(4096, 'z'), false).size(), 1u);
  auto stripped = parseHfTokenizer(
      tinyTokenizer(R"({"type": "Strip", "strip_left": true, "strip_right": true})", "null", "", ""),
      "", "t");
  ASSERT_TRUE(stripped.ok()) << stripped.status();
  EXPECT_EQ((*stripped)->encode(std::string(4096, ' ') + "ab", false).size(), 1u);
}

TEST(TokenizerInputBoundTest, ScalesWithTheNormalizersShrinkFactor) {
  // a literal Replace of 3 bytes by 1 can shrink the text to a third.
  EXPECT_EQ(boundOf(tinyTokenizer(R"({"type": "Replace", "pattern": {"String": "abc"}, "content": "a"})",
                                  "null", "", "")),
            18u);
  // NFKC folds a 4-byte character into 1 byte at most.
  EXPECT_EQ(boundOf(tinyTokenizer(R"({"type": "NFKC"})", "null", "", "")), 24u);
}

}  // namespace
}  // namespace tandem::tokenizer
