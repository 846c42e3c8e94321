#include "text/chat/unicode.h"

#include <algorithm>

namespace tandem::chat {

std::vector<char32_t> decodeUtf8(std::string_view s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = s[i];
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len <= 1 || i + len > s.size()) {
      // invalid lead bytes map to the private range 0xdc80.. (python's surrogateescape)
      out.push_back(c < 0x80 ? c : 0xDC00 + c);
      ++i;
      continue;
    }
    char32_t cp = c & (0x7F >> len);
    bool ok = true;
    for (int k = 1; k < len; ++k) {
      unsigned char cc = s[i + k];
      if ((cc >> 6) != 2) {
        ok = false;
        break;
      }
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (!ok) {
      out.push_back(0xDC00 + c);
      ++i;
      continue;
    }
    out.push_back(cp);
    i += len;
  }
  return out;
}

void appendUtf8(std::string& out, char32_t cp) {
  if (cp >= 0xDC80 && cp <= 0xDCFF) {
    out.push_back(static_cast<char>(cp - 0xDC00));
  } else if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string encodeUtf8(const std::vector<char32_t>& cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t cp : cps) appendUtf8(out, cp);
  return out;
}

bool isPySpace(char32_t cp) {
  switch (cp) {
    case ' ': case '\t': case '\n': case '\v': case '\f': case '\r':
    case 0x1C: case 0x1D: case 0x1E: case 0x1F: case 0x85: case 0xA0:
    case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

char32_t toUpper(char32_t cp) {
  if (cp >= 'a' && cp <= 'z') return cp - 32;
  if ((cp >= 0xE0 && cp <= 0xFE && cp != 0xF7)) return cp - 32;
  if (cp >= 0x3B1 && cp <= 0x3C9 && cp != 0x3C2) return cp - 32;
  if (cp >= 0x430 && cp <= 0x44F) return cp - 32;
  if (cp >= 0x450 && cp <= 0x45F) return cp - 80;
  return cp;
}

char32_t toLower(char32_t cp) {
  if (cp >= 'A' && cp <= 'Z') return cp + 32;
  if ((cp >= 0xC0 && cp <= 0xDE && cp != 0xD7)) return cp + 32;
  if (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) return cp + 32;
  if (cp >= 0x410 && cp <= 0x42F) return cp + 32;
  if (cp >= 0x400 && cp <= 0x40F) return cp + 80;
  return cp;
}

bool isAlpha(char32_t cp) {
  if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return true;
  if (cp < 0xC0) return cp == 0xAA || cp == 0xB5 || cp == 0xBA;
  if (cp == 0xD7 || cp == 0xF7) return false;
  // treat everything else outside punctuation/space blocks as letters
  return !isPySpace(cp) && !(cp >= 0x2000 && cp <= 0x2BFF) && !(cp >= 0x3000 && cp <= 0x303F);
}

std::string pyStrip(std::string_view s, const std::string* chars, bool left, bool right) {
  std::vector<char32_t> cps = decodeUtf8(s);
  std::vector<char32_t> set;
  if (chars != nullptr) set = decodeUtf8(*chars);
  auto strip = [&](char32_t cp) {
    if (chars == nullptr) return isPySpace(cp);
    return std::find(set.begin(), set.end(), cp) != set.end();
  };
  size_t b = 0, e = cps.size();
  if (left) while (b < e && strip(cps[b])) ++b;
  if (right) while (e > b && strip(cps[e - 1])) --e;
  return encodeUtf8(std::vector<char32_t>(cps.begin() + b, cps.begin() + e));
}

std::string pyUpper(std::string_view s) {
  std::vector<char32_t> cps = decodeUtf8(s);
  for (char32_t& cp : cps) cp = toUpper(cp);
  return encodeUtf8(cps);
}

std::string pyLower(std::string_view s) {
  std::vector<char32_t> cps = decodeUtf8(s);
  for (char32_t& cp : cps) cp = toLower(cp);
  return encodeUtf8(cps);
}

std::string pyTitle(std::string_view s) {
  std::vector<char32_t> cps = decodeUtf8(s);
  bool prev_cased = false;
  for (char32_t& cp : cps) {
    bool alpha = isAlpha(cp);
    if (alpha) cp = prev_cased ? toLower(cp) : toUpper(cp);
    prev_cased = alpha;
  }
  return encodeUtf8(cps);
}

std::string pyCapitalize(std::string_view s) {
  std::vector<char32_t> cps = decodeUtf8(s);
  for (size_t i = 0; i < cps.size(); ++i) cps[i] = i == 0 ? toUpper(cps[i]) : toLower(cps[i]);
  return encodeUtf8(cps);
}

std::vector<std::string> pySplitWhitespace(std::string_view s, int64_t maxsplit) {
  std::vector<char32_t> cps = decodeUtf8(s);
  std::vector<std::string> out;
  size_t i = 0, n = cps.size();
  while (true) {
    while (i < n && isPySpace(cps[i])) ++i;
    if (i == n) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      // python keeps the remainder as is, trailing whitespace included
      out.push_back(encodeUtf8(std::vector<char32_t>(cps.begin() + i, cps.end())));
      break;
    }
    size_t j = i;
    while (j < n && !isPySpace(cps[j])) ++j;
    out.push_back(encodeUtf8(std::vector<char32_t>(cps.begin() + i, cps.begin() + j)));
    i = j;
  }
  return out;
}

}  // namespace tandem::chat
