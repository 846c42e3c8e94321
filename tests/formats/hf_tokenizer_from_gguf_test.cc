#include "formats/hf_tokenizer_from_gguf.h"

#include <filesystem>
#include <string>

#include "common/mapped_file.h"
#include "formats/gguf_file.h"
#include "formats/gguf_vocab_from_hf.h"
#include "formats/gguf_writer.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/model/synth.h"
#include "server/model/weights.h"
#include "tests/formats/tokenizer_equivalence.h"
#include "tests/test_paths.h"
#include "tests/text/tokenizer/vocab_test_cases.h"
#include "text/tokenizer/tokenizer.h"

namespace tandem::model {
namespace {

using tokenizer::Tokenizer;

class HfTokenizerFromGgufTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = tandem::testing::makeTempDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static std::string spmGguf() {
    return tandem::testing::testDataDir() + "/tokenizers/ggml-vocab-llama-spm.gguf";
  }

  std::string dir_;
};

TEST_F(HfTokenizerFromGgufTest, SynthHfModelFromTheLlamaSpmGgufTokenizesAlike) {
  SynthOptions o;
  o.out = dir_ + "/spm";
  o.format = SynthOptions::Format::kHf;
  o.dtype = DType::kBF16;
  o.shape = *parseShape("dim=64,layers=1,heads=4,kv_heads=2,ffn=128");
  o.vocab_from = spmGguf();
  ASSERT_TRUE(writeSynthModel(o).ok());
  auto w = ModelWeights::load(o.out);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ((*w)->config().vocab_size, 32000);

  auto from_hf = Tokenizer::fromHfDir(o.out);
  auto gguf = GgufFile::open(spmGguf());
  ASSERT_TRUE(from_hf.ok() && gguf.ok()) << from_hf.status();
  auto from_gguf = Tokenizer::fromGguf(**gguf);
  ASSERT_TRUE(from_gguf.ok()) << from_gguf.status();
  EXPECT_EQ((*from_hf)->bosId(), 1);
  EXPECT_EQ((*from_hf)->eosId(), 2);
  // llama.cpp's expected ids (HF's own tokenization of the same vocab)
  auto cases = tokenizer::testing::readVocabCases(spmGguf());
  ASSERT_EQ(cases.size(), 47u);
  for (const auto& c : cases) {
    EXPECT_EQ((*from_hf)->encode(c.text, false), c.ids) << c.text;
  }
  EXPECT_EQ(testing::countDifferences(**from_hf, **from_gguf), 0);
  EXPECT_EQ((*from_hf)->decode((*from_hf)->encode(" Hello  world\n", true), true), " Hello  world\n");

  auto config = nlohmann::json::parse(*readFile(o.out + "/tokenizer_config.json"));
  EXPECT_EQ(config["bos_token"], "<s>");
  EXPECT_EQ(config["add_bos_token"], true);
}

TEST_F(HfTokenizerFromGgufTest, WritesMergesForEverySplitOrderedByScore) {
  ASSERT_TRUE(writeHfTokenizerFromGguf(**GgufFile::open(spmGguf()), dir_).ok());
  auto tok = nlohmann::json::parse(*readFile(dir_ + "/tokenizer.json"));
  const auto& merges = tok["model"]["merges"];
  // token 260 "▁t" (score -1) is the best merge; "▁▁" (score -1e9) comes late
  EXPECT_EQ(merges[0], nlohmann::json::array({"\xE2\x96\x81", "t"}));
  EXPECT_EQ(tok["model"]["vocab"].size(), 32000u);
  EXPECT_EQ(tok["added_tokens"].size(), 3u);
  EXPECT_TRUE(tok["model"]["byte_fallback"].get<bool>());
}

// HF tokenizer.json -> GGUF keys -> tokenizer.json gives the tokenizer back.
void expectRoundTrip(const std::string& hf, int vocab_size, const std::string& dir) {
  GgufWriter w;
  w.setString("general.architecture", "llama");
  ASSERT_TRUE(addGgufVocabFromHf(hf, vocab_size, &w).ok());
  ASSERT_TRUE(w.write(dir + "/vocab.gguf", nullptr).ok());
  auto g = GgufFile::open(dir + "/vocab.gguf");
  ASSERT_TRUE(g.ok()) << g.status();
  absl::Status s = writeHfTokenizerFromGguf(**g, dir);
  ASSERT_TRUE(s.ok()) << s;
  auto back = Tokenizer::fromHfDir(dir);
  auto original = Tokenizer::fromHfDir(hf);
  ASSERT_TRUE(back.ok() && original.ok()) << back.status();
  EXPECT_EQ((*back)->vocabSize(), (*original)->vocabSize());
  EXPECT_EQ(testing::countDifferences(**original, **back), 0);
}

TEST_F(HfTokenizerFromGgufTest, Llama3ByteLevelVocabRoundTrips) {
  expectRoundTrip(tandem::testing::fetchedDataDir() + "/llama3", 128256, dir_);
}

TEST_F(HfTokenizerFromGgufTest, Qwen3ByteLevelVocabRoundTrips) {
  expectRoundTrip(tandem::testing::fetchedDataDir() + "/qwen3", 151669, dir_);
}

TEST_F(HfTokenizerFromGgufTest, StoriesSentencePieceVocabRoundTrips) {
  expectRoundTrip(tandem::testing::storiesHfDir(), 512, dir_);
}

TEST_F(HfTokenizerFromGgufTest, RejectsAGgufWithoutAVocabulary) {
  SynthOptions o;
  o.out = dir_ + "/novocab.gguf";
  o.format = SynthOptions::Format::kGguf;
  o.shape = *parseShape("dim=64,layers=1,heads=4,ffn=128,vocab=64");
  ASSERT_TRUE(writeSynthModel(o).ok());
  absl::Status s = writeHfTokenizerFromGguf(**GgufFile::open(o.out), dir_);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
}

}  // namespace
}  // namespace tandem::model
