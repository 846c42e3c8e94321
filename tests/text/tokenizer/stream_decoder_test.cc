// StreamDecoder: text deltas are whole UTF-8 characters.
#include <gtest/gtest.h>

#include "formats/gguf_file.h"
#include "tests/test_paths.h"
#include "text/tokenizer/tokenizer.h"

namespace tandem::tokenizer {
namespace {

class StreamDecoderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto gguf = model::GgufFile::open(tandem::testing::testDataDir() +
                                      "/tokenizers/ggml-vocab-llama-spm.gguf");
    ASSERT_TRUE(gguf.ok()) << gguf.status();
    auto tok = Tokenizer::fromGguf(**gguf);
    ASSERT_TRUE(tok.ok()) << tok.status();
    tok_ = std::move(*tok);
  }
  TokenizerPtr tok_;
};

TEST_F(StreamDecoderTest, HoldsACharacterSplitAcrossByteTokensUntilWhole) {
  // "a🦙b": the llama is four <0xXX> byte-fallback tokens
  std::vector<TokenId> ids = tok_->encode("a\xF0\x9F\xA6\x99" "b", true);
  ASSERT_EQ(ids, (std::vector<TokenId>{1, 263, 243, 162, 169, 156, 29890}));
  StreamDecoder stream(*tok_);
  std::vector<std::string> deltas;
  for (TokenId id : ids) deltas.push_back(stream.push(id));
  EXPECT_EQ(deltas, (std::vector<std::string>{"", "a", "", "", "", "\xF0\x9F\xA6\x99", "b"}));
  EXPECT_EQ(stream.finish(), "");
}

TEST_F(StreamDecoderTest, DropsTheLeadingSpaceOnceLikeDecode) {
  std::vector<TokenId> ids = tok_->encode("Hello world", true);
  StreamDecoder stream(*tok_);
  std::string text;
  for (TokenId id : ids) text += stream.push(id);
  text += stream.finish();
  EXPECT_EQ(text, tok_->decode(ids, true));
  EXPECT_EQ(text, "Hello world");
}

TEST_F(StreamDecoderTest, KeepsSpecialTokensWhenAsked) {
  StreamDecoder stream(*tok_, /*skip_special=*/false);
  EXPECT_EQ(stream.push(1), "<s>");
  EXPECT_EQ(stream.push(15043), " Hello");
}

TEST_F(StreamDecoderTest, FinishTurnsAnUnfinishedCharacterIntoAReplacementCharacter) {
  StreamDecoder stream(*tok_);
  EXPECT_EQ(stream.push(263), "a");
  EXPECT_EQ(stream.push(243), "");  // 0xF0: the start of a 4-byte character
  EXPECT_EQ(stream.push(162), "");
  EXPECT_EQ(stream.finish(), "\xEF\xBF\xBD");
}

TEST_F(StreamDecoderTest, ReplacesAStrayContinuationByte) {
  StreamDecoder stream(*tok_);
  EXPECT_EQ(stream.push(263), "a");
  EXPECT_EQ(stream.push(162), "\xEF\xBF\xBD");  // 0x9F alone
  EXPECT_EQ(stream.push(263), " a");
}

}  // namespace
}  // namespace tandem::tokenizer
