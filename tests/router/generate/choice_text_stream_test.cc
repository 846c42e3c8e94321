// ChoiceTextStream: stop strings across token boundaries, held-back text,
// whole UTF-8, on the stories260K tokenizer.
#include "router/generate/choice_text_stream.h"

#include <gtest/gtest.h>

#include "tests/stories_oracle.h"
#include "tests/test_paths.h"

namespace tandem::router {
namespace {

class ChoiceTextStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto tok = tokenizer::Tokenizer::load(tandem::testing::storiesGguf());
    ASSERT_TRUE(tok.ok()) << tok.status();
    tok_ = std::move(*tok);
    completion_ = tandem::testing::storiesOracle()[0].completion_ids;
    text_ = tandem::testing::storiesOracle()[0].completion_text;
  }

  // feeds the oracle's first completion; returns the deltas.
  std::vector<std::string> run(ChoiceTextStream& stream) {
    std::vector<std::string> deltas;
    for (int32_t id : completion_) {
      deltas.push_back(stream.push(id));
      if (stream.stopped()) return deltas;
    }
    deltas.push_back(stream.finish());
    return deltas;
  }
  static std::string join(const std::vector<std::string>& parts) {
    std::string s;
    for (const auto& p : parts) s += p;
    return s;
  }

  tokenizer::TokenizerPtr tok_;
  std::vector<int32_t> completion_;
  std::string text_;
};

TEST_F(ChoiceTextStreamTest, WithoutStopStringsReproducesTheWholeText) {
  ChoiceTextStream stream(*tok_, {}, false, true);
  const auto deltas = run(stream);
  EXPECT_EQ(join(deltas), text_);
  EXPECT_FALSE(stream.stopped());
  // streamed token by token: many non-empty deltas.
  EXPECT_GT(std::count_if(deltas.begin(), deltas.end(), [](auto& d) { return !d.empty(); }), 30);
}

TEST_F(ChoiceTextStreamTest, KeepsTheLeadingSpaceOfAContinuation) {
  // " there" after the prompt: the space belongs to the completion.
  ChoiceTextStream stream(*tok_, {}, false, true);
  const std::vector<int32_t> ids = tok_->encode("a story there", false);
  std::string text;
  for (size_t i = 1; i < ids.size(); ++i) text += stream.push(ids[i]);
  EXPECT_EQ(text + stream.finish(), " story there");
}

TEST_F(ChoiceTextStreamTest, StopsBeforeAStopStringSpanningTokens) {
  // " gir" is not a token of its own: it ends inside " girl".
  const size_t cut = text_.find(" girl");
  ASSERT_NE(cut, std::string::npos);
  ChoiceTextStream stream(*tok_, {"zzz", " gir"}, false, true);
  EXPECT_EQ(join(run(stream)), text_.substr(0, cut));
  EXPECT_TRUE(stream.stopped());
  EXPECT_EQ(stream.matchedStop(), " gir");
  EXPECT_EQ(stream.push(completion_.back()), "");
  EXPECT_EQ(stream.finish(), "");
}

TEST_F(ChoiceTextStreamTest, IncludesTheStopStringWhenAsked) {
  const size_t cut = text_.find("little");
  ChoiceTextStream stream(*tok_, {"ttle"}, true, true);
  EXPECT_EQ(join(run(stream)), text_.substr(0, cut + 6));
}

TEST_F(ChoiceTextStreamTest, HoldsBackAPossibleStopStringPrefixThenReleasesIt) {
  // ", there was a little girl named Lily." with stop ", there is": ", there"
  // is held back until " was" shows it is not the stop string.
  ChoiceTextStream stream(*tok_, {", there is"}, false, true);
  std::string sent;
  bool held = false;
  for (int32_t id : completion_) {
    sent += stream.push(id);
    if (!sent.empty()) break;
    held = true;
  }
  EXPECT_TRUE(held);
  // the first text sent already shows it is not ", there is".
  EXPECT_TRUE(sent.starts_with(", there w")) << sent;
  EXPECT_FALSE(stream.stopped());
}

TEST_F(ChoiceTextStreamTest, TheEarliestOfSeveralStopStringsWins) {
  ChoiceTextStream stream(*tok_, {"Lily", "little"}, false, true);
  EXPECT_EQ(join(run(stream)), text_.substr(0, text_.find("little")));
  EXPECT_EQ(stream.matchedStop(), "little");
}

TEST_F(ChoiceTextStreamTest, AStopStringAtTheVeryStartGivesNoText) {
  ChoiceTextStream stream(*tok_, {","}, false, true);
  EXPECT_EQ(join(run(stream)), "");
  EXPECT_TRUE(stream.stopped());
}

TEST_F(ChoiceTextStreamTest, NeverSplitsAUtf8Character) {
  // the euro sign as three byte-fallback tokens, then a stop string.
  const std::vector<int32_t> ids = tok_->encode("a \xE2\x82\xAC b", false);
  ChoiceTextStream stream(*tok_, {"xyz"}, false, true);
  std::string text;
  for (int32_t id : ids) {
    const std::string delta = stream.push(id);
    // every delta is whole UTF-8: no lone lead or continuation bytes.
    for (size_t i = 0; i < delta.size();) {
      const unsigned char c = delta[i];
      const size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
      ASSERT_LE(i + len, delta.size()) << "split character in '" << delta << "'";
      i += len;
    }
    text += delta;
  }
  EXPECT_EQ(text + stream.finish(), " a \xE2\x82\xAC b");
}

TEST_F(ChoiceTextStreamTest, KeepsTheSpecialTokensItIsToldToEvenWhenSkippingSpecialOnes) {
  // </s> (id 2) stands in for a tool-call marker such as [TOOL_CALLS].
  const int32_t marker = 2;
  ASSERT_TRUE(tok_->isSpecial(marker));
  ASSERT_EQ(tok_->tokenBytes(marker), "</s>");
  const std::vector<int32_t> ids = {completion_[0], marker, completion_[1]};
  ChoiceTextStream skipping(*tok_, {}, false, /*skip_special=*/true);
  ChoiceTextStream keeping(*tok_, {}, false, /*skip_special=*/true, {marker});
  std::string skipped, kept;
  for (int32_t id : ids) {
    skipped += skipping.push(id);
    kept += keeping.push(id);
  }
  skipped += skipping.finish();
  kept += keeping.finish();
  const std::string first = tok_->tokenBytes(completion_[0]);
  const std::string second = tok_->tokenBytes(completion_[1]);
  EXPECT_EQ(skipped, first + second);
  EXPECT_EQ(kept, first + "</s>" + second);
}

// the text of `text`'s tokens pushed one by one, then finish().
std::string streamed(ChoiceTextStream& stream, const tokenizer::Tokenizer& tok, const std::string& text) {
  std::string out;
  for (int32_t id : tok.encode(text, false)) out += stream.push(id);
  return out + stream.finish();
}

// stop strings whose own prefixes repeat: a partial match that fails must
// fall back to the longest prefix still matching, not to nothing.
TEST_F(ChoiceTextStreamTest, FindsStopStringsThatOverlapThemselves) {
  ChoiceTextStream aab(*tok_, {"aab"}, false, true);
  EXPECT_EQ(streamed(aab, *tok_, "xaaab y"), " xa");
  EXPECT_EQ(aab.matchedStop(), "aab");
  ChoiceTextStream abac(*tok_, {"abac"}, false, true);
  EXPECT_EQ(streamed(abac, *tok_, "ababac"), " ab");
  ChoiceTextStream none(*tok_, {"abac"}, false, true);
  EXPECT_EQ(streamed(none, *tok_, "ababab"), " ababab");
  EXPECT_FALSE(none.stopped());
}

}  // namespace
}  // namespace tandem::router
