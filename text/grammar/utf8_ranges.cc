#include "text/grammar/utf8_ranges.h"

#include <algorithm>

namespace tandem::grammar {
namespace {

constexpr uint32_t kSurrogateLo = 0xD800;
constexpr uint32_t kSurrogateHi = 0xDFFF;
// the largest code point of each encoded length 1..4.
constexpr uint32_t kMaxOfLength[] = {0x7F, 0x7FF, 0xFFFF, kMaxCodePoint};

int encodedLength(uint32_t cp) {
  for (int n = 0; n < 4; ++n) {
    if (cp <= kMaxOfLength[n]) return n + 1;
  }
  return 4;
}

// [lo, hi] share an encoded length: split until every byte position is a
// plain range (regex-syntax's Utf8Sequences).
void splitSameLength(uint32_t lo, uint32_t hi, std::vector<Utf8Sequence>& out) {
  const int n = encodedLength(lo);
  for (int i = 1; i < n; ++i) {
    const uint32_t m = (uint32_t{1} << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        splitSameLength(lo, lo | m, out);
        splitSameLength((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        splitSameLength(lo, (hi & ~m) - 1, out);
        splitSameLength(hi & ~m, hi, out);
        return;
      }
    }
  }
  std::vector<uint8_t> a;
  std::vector<uint8_t> b;
  appendUtf8(lo, a);
  appendUtf8(hi, b);
  Utf8Sequence seq;
  for (size_t k = 0; k < a.size(); ++k) seq.push_back({a[k], b[k]});
  out.push_back(std::move(seq));
}

}  // namespace

void appendUtf8(uint32_t cp, std::vector<uint8_t>& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<uint8_t>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<uint8_t>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<uint8_t>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<uint8_t>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<uint8_t>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<uint8_t>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<uint8_t>(0x80 | (cp & 0x3F)));
  }
}

std::vector<CodePointRange> normalizeRanges(std::vector<CodePointRange> ranges) {
  std::vector<CodePointRange> cut;
  for (auto [lo, hi] : ranges) {
    hi = std::min(hi, kMaxCodePoint);
    if (lo > hi) continue;
    // drop the surrogates.
    if (lo < kSurrogateLo && hi >= kSurrogateLo) {
      cut.push_back({lo, kSurrogateLo - 1});
      lo = kSurrogateLo;
    }
    if (lo >= kSurrogateLo && lo <= kSurrogateHi) lo = kSurrogateHi + 1;
    if (lo <= hi) cut.push_back({lo, hi});
  }
  std::sort(cut.begin(), cut.end());
  std::vector<CodePointRange> merged;
  for (const CodePointRange& r : cut) {
    if (!merged.empty() && r.first <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

std::vector<CodePointRange> complementRanges(const std::vector<CodePointRange>& ranges) {
  std::vector<CodePointRange> out;
  uint32_t next = 0;
  for (const auto& [lo, hi] : ranges) {
    if (lo > next) out.push_back({next, lo - 1});
    next = hi + 1;
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  return normalizeRanges(std::move(out));
}

std::vector<Utf8Sequence> utf8Sequences(const std::vector<CodePointRange>& ranges) {
  std::vector<Utf8Sequence> out;
  for (auto [lo, hi] : ranges) {
    // split at the encoded-length boundaries first.
    for (uint32_t top : kMaxOfLength) {
      if (lo > hi) break;
      if (lo > top) continue;
      const uint32_t end = std::min(hi, top);
      splitSameLength(lo, end, out);
      lo = end + 1;
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Utf8Sequence& a, const Utf8Sequence& b) { return a.size() < b.size(); });
  return out;
}

}  // namespace tandem::grammar
