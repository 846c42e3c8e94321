#include "text/tokenizer/text_util.h"

#include <gtest/gtest.h>

#include "text/tokenizer/split_regex.h"

namespace tandem::tokenizer {
namespace {

class TextUtilTest : public ::testing::Test {};

TEST_F(TextUtilTest, ByteLevelMapRoundTripsEveryByte) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  std::string mapped = byteLevelEncode(all);
  EXPECT_EQ(byteLevelEncode(" "), "\xC4\xA0");  // Ġ
  EXPECT_EQ(byteLevelEncode("\n"), "\xC4\x8A");  // Ċ
  EXPECT_EQ(byteLevelDecode(mapped), all);
  EXPECT_EQ(byteLevelDecode("\xE4\xB8\xAD"), std::nullopt);  // not a stand-in
}

TEST_F(TextUtilTest, ParsesByteTokens) {
  EXPECT_EQ(parseByteToken("<0x0A>"), 0x0A);
  EXPECT_EQ(parseByteToken("<0xfF>"), 0xFF);
  EXPECT_EQ(parseByteToken("<0xG0>"), std::nullopt);
  EXPECT_EQ(parseByteToken("<s>"), std::nullopt);
  EXPECT_EQ(byteTokenName(0xE4), "<0xE4>");
}

TEST_F(TextUtilTest, FindsTheCompletePrefixOfUtf8) {
  EXPECT_EQ(completeUtf8Prefix("ab\xE4\xB8"), 2u);
  EXPECT_EQ(completeUtf8Prefix("ab\xE4\xB8\xAD"), 5u);
  EXPECT_EQ(completeUtf8Prefix("\xF0\x9F\xA6"), 0u);
  EXPECT_EQ(completeUtf8Prefix("a\xFF"), 2u);  // invalid, not unfinished
}

TEST_F(TextUtilTest, ReplacesInvalidSequences) {
  EXPECT_EQ(sanitizeUtf8("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(sanitizeUtf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong
  EXPECT_EQ(sanitizeUtf8("\xE4\xB8\xAD"), "\xE4\xB8\xAD");
}

TEST_F(TextUtilTest, SplitRegexHonoursItsBehaviors) {
  auto split = [](SplitRegex::Behavior b, bool invert, std::string_view text) {
    auto re = SplitRegex::create("-", b, invert);
    EXPECT_TRUE(re.ok());
    std::vector<std::string_view> out;
    (*re)->split(text, &out);
    return std::vector<std::string>(out.begin(), out.end());
  };
  using B = SplitRegex::Behavior;
  using V = std::vector<std::string>;
  EXPECT_EQ(split(B::kIsolated, false, "a-b--c"), (V{"a", "-", "b", "-", "-", "c"}));
  EXPECT_EQ(split(B::kRemoved, false, "a-b--c"), (V{"a", "b", "c"}));
  EXPECT_EQ(split(B::kMergedWithPrevious, false, "a-b--c"), (V{"a-", "b-", "-", "c"}));
  EXPECT_EQ(split(B::kMergedWithNext, false, "a-b--c"), (V{"a", "-b", "-", "-c"}));
  EXPECT_EQ(split(B::kContiguous, false, "a-b--c"), (V{"a", "-", "b", "--", "c"}));
  EXPECT_EQ(split(B::kRemoved, true, "a-b--c"), (V{"-", "-", "-"}));
  EXPECT_FALSE(SplitRegex::create("(", B::kIsolated, false).ok());
}

TEST_F(TextUtilTest, SplitRegexTreatsUnicodeWhitespaceLikeOniguruma) {
  auto re = SplitRegex::create("\\s+", SplitRegex::Behavior::kIsolated, false);
  ASSERT_TRUE(re.ok());
  std::vector<std::string_view> out;
  (*re)->split("a\x0B\xC2\x85" "b", &out);  // vertical tab, next line
  EXPECT_EQ(out, (std::vector<std::string_view>{"a", "\x0B\xC2\x85", "b"}));
}

}  // namespace
}  // namespace tandem::tokenizer
