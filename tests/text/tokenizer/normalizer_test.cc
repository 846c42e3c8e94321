// Normalizer::shrinkFactor: how far a normalizer can shrink a text, the
// factor the tokenizers' byte bound (maxInputBytesPerToken) multiplies by.
// The Unicode forms and Lowercase are said to shrink at most to a quarter:
// checked here on every assigned code point alone and on every canonical
// and compatibility decomposition recomposed (composition is the only way
// several code points become fewer).
#include "text/tokenizer/normalizer.h"

#include <string>

#include <gtest/gtest.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include "nlohmann/json.hpp"

namespace tandem::tokenizer {
namespace {

size_t shrinkOf(const std::string& json) {
  auto n = Normalizer::fromJson(nlohmann::json::parse(json));
  EXPECT_TRUE(n.ok()) << n.status();
  return n.ok() ? n->shrinkFactor() : 99;
}

TEST(NormalizerTest, ShrinkFactorOfEachStep) {
  EXPECT_EQ(shrinkOf("null"), 1u);
  EXPECT_EQ(shrinkOf(R"({"type": "Prepend", "prepend": "x"})"), 1u);
  EXPECT_EQ(shrinkOf(R"({"type": "NFC"})"), 4u);
  EXPECT_EQ(shrinkOf(R"({"type": "Lowercase"})"), 4u);
  // a space (1 byte) by "▁" (3) grows; "abcd" by "x" shrinks to a quarter,
  // "abc" by "xy" to two thirds (rounded up to a factor of 2).
  EXPECT_EQ(shrinkOf(R"({"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"})"), 1u);
  EXPECT_EQ(shrinkOf(R"({"type": "Replace", "pattern": {"String": "abcd"}, "content": "x"})"), 4u);
  EXPECT_EQ(shrinkOf(R"({"type": "Replace", "pattern": {"String": "abc"}, "content": "xy"})"), 2u);
  // steps multiply; one without a bound leaves none.
  EXPECT_EQ(shrinkOf(R"({"type": "Sequence", "normalizers": [{"type": "NFKC"}, {"type": "Lowercase"}]})"),
            16u);
  EXPECT_EQ(shrinkOf(R"({"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Strip"}]})"), 0u);
  EXPECT_EQ(shrinkOf(R"({"type": "Replace", "pattern": {"String": "a"}, "content": ""})"), 0u);
  EXPECT_EQ(shrinkOf(R"({"type": "Replace", "pattern": {"Regex": "a"}, "content": "b"})"), 0u);
}

std::string utf8(const icu::UnicodeString& s) {
  std::string out;
  s.toUTF8String(out);
  return out;
}

TEST(NormalizerTest, UnicodeFormsAndLowercaseShrinkNoTextBelowAQuarter) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* forms[] = {
      icu::Normalizer2::getNFCInstance(status), icu::Normalizer2::getNFDInstance(status),
      icu::Normalizer2::getNFKCInstance(status), icu::Normalizer2::getNFKDInstance(status)};
  ASSERT_TRUE(U_SUCCESS(status));
  const icu::Normalizer2* composers[] = {forms[0], forms[2]};
  size_t worst_num = 1, worst_den = 1;  // the largest in/out byte ratio seen
  auto check = [&](const icu::UnicodeString& in, const icu::UnicodeString& out, const char* what) {
    const size_t in_bytes = utf8(in).size(), out_bytes = utf8(out).size();
    ASSERT_LE(in_bytes, 4 * out_bytes) << what << " of U+" << std::hex << in.char32At(0);
    if (in_bytes * worst_den > worst_num * out_bytes) {
      worst_num = in_bytes;
      worst_den = out_bytes;
    }
  };
  for (UChar32 cp = 0; cp <= 0x10FFFF; ++cp) {
    const int8_t type = u_charType(cp);
    if (type == U_UNASSIGNED || type == U_SURROGATE || type == U_PRIVATE_USE_CHAR) continue;
    const icu::UnicodeString one(cp);
    for (const icu::Normalizer2* form : forms) {
      UErrorCode s = U_ZERO_ERROR;
      check(one, form->normalize(one, s), "a normal form");
    }
    icu::UnicodeString lower(one);
    check(one, lower.toLower(), "Lowercase");
    // the decompositions, recomposed: as much as composition folds.
    for (const icu::Normalizer2* decomposer : {forms[1], forms[3]}) {
      UErrorCode s = U_ZERO_ERROR;
      const icu::UnicodeString decomposed = decomposer->normalize(one, s);
      for (const icu::Normalizer2* composer : composers) {
        UErrorCode c = U_ZERO_ERROR;
        check(decomposed, composer->normalize(decomposed, c), "a composition");
      }
    }
  }
  // the quarter is reached (a 4-byte letter to ASCII), so it is not loose.
  EXPECT_EQ(worst_num, 4 * worst_den);
}

}  // namespace
}  // namespace tandem::tokenizer
