// Code-point ranges as UTF-8 byte-range sequences (the construction regex
// engines use to match Unicode classes byte by byte): every code point of
// the ranges, and nothing else, is encoded by exactly one sequence, and
// each sequence is one byte range per position of the encoding.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace tandem::grammar {

// an inclusive range of code points.
using CodePointRange = std::pair<uint32_t, uint32_t>;
// an inclusive range of bytes, one per position of an encoding.
using ByteRange = std::pair<uint8_t, uint8_t>;
using Utf8Sequence = std::vector<ByteRange>;

// the largest code point.
inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// sorts and merges `ranges` into disjoint ascending ranges, dropping what
// lies above kMaxCodePoint and the surrogates (D800-DFFF), which UTF-8
// cannot encode.
std::vector<CodePointRange> normalizeRanges(std::vector<CodePointRange> ranges);

// every code point in [0, kMaxCodePoint] outside `ranges` (normalized),
// surrogates excluded.
std::vector<CodePointRange> complementRanges(const std::vector<CodePointRange>& ranges);

// the UTF-8 byte sequences of normalized `ranges`, shortest encodings first.
std::vector<Utf8Sequence> utf8Sequences(const std::vector<CodePointRange>& ranges);

// appends the UTF-8 encoding of code point `cp` (<= kMaxCodePoint).
void appendUtf8(uint32_t cp, std::vector<uint8_t>& out);

}  // namespace tandem::grammar
