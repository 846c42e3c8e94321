#include "formats/gguf_vocab_from_hf.h"

#include <filesystem>
#include <string>

#include "formats/gguf_file.h"
#include "formats/gguf_writer.h"
#include "gtest/gtest.h"
#include "server/model/synth.h"
#include "server/model/weights.h"
#include "tests/formats/tokenizer_equivalence.h"
#include "tests/test_paths.h"
#include "text/tokenizer/tokenizer.h"

namespace tandem::model {
namespace {

using tokenizer::Tokenizer;

class GgufVocabFromHfTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = tandem::testing::makeTempDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // a GGUF holding only the tokenizer keys converted from `hf_dir`.
  GgufFilePtr convert(const std::string& hf_dir, int vocab_size) {
    GgufWriter w;
    w.setString("general.architecture", "llama");
    absl::Status s = addGgufVocabFromHf(hf_dir, vocab_size, &w);
    EXPECT_TRUE(s.ok()) << s;
    if (!s.ok()) return nullptr;
    std::string path = dir_ + "/vocab.gguf";
    EXPECT_TRUE(w.write(path, nullptr).ok());
    auto g = GgufFile::open(path);
    EXPECT_TRUE(g.ok()) << g.status();
    return g.ok() ? *g : nullptr;
  }

  std::string dir_;
};

TEST_F(GgufVocabFromHfTest, SynthGgufFromTheStoriesTokenizerJsonTokenizesAlike) {
  SynthOptions o;
  o.out = dir_ + "/stories.gguf";
  o.format = SynthOptions::Format::kGguf;
  o.shape = *parseShape("dim=64,layers=2,heads=4,kv_heads=2,ffn=128");
  o.vocab_from = tandem::testing::storiesHfDir();
  ASSERT_TRUE(writeSynthModel(o).ok());
  auto w = ModelWeights::load(o.out);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ((*w)->config().vocab_size, 512);
  const GgufFile& g = *(*w)->gguf();
  EXPECT_EQ(*g.getString("tokenizer.ggml.model"), "llama");
  auto types = *g.getIntArray("tokenizer.ggml.token_type");
  auto scores = *g.getFloatArray("tokenizer.ggml.scores");
  auto tokens = *g.getStringArray("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 512u);
  EXPECT_EQ(tokens[259], "\xE2\x96\x81t");  // ▁t, the first merge
  EXPECT_EQ((std::vector<int64_t>{types[0], types[1], types[2], types[3], types[259]}),
            (std::vector<int64_t>{2, 3, 3, 6, 1}));
  EXPECT_EQ(scores[259], 0.0);   // merge 0
  EXPECT_EQ(scores[260], -1.0);  // "h e", merge 1
  EXPECT_EQ(*g.getInt("tokenizer.ggml.bos_token_id"), 1);
  EXPECT_EQ(*g.getInt("tokenizer.ggml.eos_token_id"), 2);
  EXPECT_EQ(*g.getInt("tokenizer.ggml.unknown_token_id"), 0);
  EXPECT_TRUE(*g.getBool("tokenizer.ggml.add_bos_token"));
  EXPECT_TRUE(*g.getBool("tokenizer.ggml.add_space_prefix"));

  auto from_gguf = Tokenizer::load(o.out);
  auto from_hf = Tokenizer::fromHfDir(tandem::testing::storiesHfDir());
  ASSERT_TRUE(from_gguf.ok() && from_hf.ok()) << from_gguf.status() << from_hf.status();
  EXPECT_EQ((*from_gguf)->kind(), "spm-bpe");
  EXPECT_EQ(testing::countDifferences(**from_hf, **from_gguf), 0);
}

TEST_F(GgufVocabFromHfTest, Llama3TokenizerJsonBecomesALlamaBpeVocab) {
  const std::string hf = tandem::testing::fetchedDataDir() + "/llama3";
  GgufFilePtr g = convert(hf, 128256);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(*g->getString("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(*g->getString("tokenizer.ggml.pre"), "llama-bpe");
  auto tokens = *g->getStringArray("tokenizer.ggml.tokens");
  auto types = *g->getIntArray("tokenizer.ggml.token_type");
  ASSERT_EQ(tokens.size(), 128256u);
  EXPECT_EQ(tokens[128000], "<|begin_of_text|>");
  EXPECT_EQ(types[128000], 3);
  EXPECT_EQ(types[127999], 1);
  EXPECT_EQ(g->getStringArray("tokenizer.ggml.merges")->size(), 280147u);
  EXPECT_EQ(*g->getInt("tokenizer.ggml.bos_token_id"), 128000);
  EXPECT_EQ(*g->getInt("tokenizer.ggml.eos_token_id"), 128001);
  EXPECT_TRUE(*g->getBool("tokenizer.ggml.add_bos_token"));

  auto from_gguf = Tokenizer::fromGguf(*g);
  auto from_hf = Tokenizer::fromHfDir(hf);
  ASSERT_TRUE(from_gguf.ok() && from_hf.ok()) << from_gguf.status() << from_hf.status();
  EXPECT_EQ(testing::countDifferences(**from_hf, **from_gguf), 0);
}

TEST_F(GgufVocabFromHfTest, Qwen3TokenizerJsonBecomesAQwen2VocabWithItsChatTemplate) {
  const std::string hf = tandem::testing::fetchedDataDir() + "/qwen3";
  GgufFilePtr g = convert(hf, 151669);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(*g->getString("tokenizer.ggml.pre"), "qwen2");
  auto types = *g->getIntArray("tokenizer.ggml.token_type");
  EXPECT_EQ(types[151644], 3);  // <|im_start|>
  EXPECT_EQ(types[151665], 4);  // <tool_response>, added but not special
  EXPECT_EQ(g->find("tokenizer.ggml.bos_token_id"), nullptr);
  EXPECT_EQ(*g->getInt("tokenizer.ggml.eos_token_id"), 151645);
  EXPECT_EQ(*g->getInt("tokenizer.ggml.padding_token_id"), 151643);
  EXPECT_FALSE(*g->getBool("tokenizer.ggml.add_bos_token"));
  auto tmpl = g->getString("tokenizer.chat_template");
  ASSERT_TRUE(tmpl.ok());
  EXPECT_TRUE(tmpl->starts_with("{%- if tools %}")) << *tmpl;

  auto from_gguf = Tokenizer::fromGguf(*g);
  auto from_hf = Tokenizer::fromHfDir(hf);
  ASSERT_TRUE(from_gguf.ok() && from_hf.ok()) << from_gguf.status() << from_hf.status();
  EXPECT_EQ(testing::countDifferences(**from_hf, **from_gguf), 0);
}

TEST_F(GgufVocabFromHfTest, PadsIdsTheTokenizerLacksAsUnusedTokens) {
  GgufFilePtr g = convert(tandem::testing::storiesHfDir(), 515);
  ASSERT_NE(g, nullptr);
  auto tokens = *g->getStringArray("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 515u);
  EXPECT_EQ(tokens[514], "[PAD514]");
  EXPECT_EQ(g->getIntArray("tokenizer.ggml.token_type")->at(514), 5);
}

TEST_F(GgufVocabFromHfTest, RejectsAVocabSizeBelowTheLargestId) {
  GgufWriter w;
  absl::Status s = addGgufVocabFromHf(tandem::testing::storiesHfDir(), 100, &w);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
}

}  // namespace
}  // namespace tandem::model
