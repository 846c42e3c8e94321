#include "text/tokenizer/text_util.h"

#include <array>

namespace tandem::tokenizer {
namespace {

// gpt-2's bytes_to_unicode: printable latin-1 bytes stand for themselves,
// the others are shifted to 256 + n in byte order.
struct ByteMap {
  std::array<uint32_t, 256> to_cp{};
  std::array<int16_t, 324> from_cp{};  // code points < 324, -1 when unused
  ByteMap() {
    from_cp.fill(-1);
    uint32_t n = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
      to_cp[b] = printable ? b : 256 + n++;
      from_cp[to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteMap& byteMap() {
  static const ByteMap* map = new ByteMap();
  return *map;
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// the length of a valid UTF-8 sequence at the start of `s`; 0 when `s` is a
// valid but unfinished prefix, -1 when invalid.
int validSequence(std::string_view s) {
  auto c0 = static_cast<unsigned char>(s[0]);
  if (c0 < 0x80) return 1;
  int len;
  uint32_t min_second = 0x80, max_second = 0xBF;
  if (c0 >= 0xC2 && c0 <= 0xDF) {
    len = 2;
  } else if (c0 >= 0xE0 && c0 <= 0xEF) {
    len = 3;
    if (c0 == 0xE0) min_second = 0xA0;  // overlong
    if (c0 == 0xED) max_second = 0x9F;  // surrogates
  } else if (c0 >= 0xF0 && c0 <= 0xF4) {
    len = 4;
    if (c0 == 0xF0) min_second = 0x90;
    if (c0 == 0xF4) max_second = 0x8F;
  } else {
    return -1;
  }
  for (int i = 1; i < len; ++i) {
    if (static_cast<size_t>(i) >= s.size()) return 0;
    auto c = static_cast<unsigned char>(s[i]);
    uint32_t lo = i == 1 ? min_second : 0x80, hi = i == 1 ? max_second : 0xBF;
    if (c < lo || c > hi) return -1;
  }
  return len;
}

}  // namespace

size_t utf8CharLen(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

void appendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string byteLevelEncode(std::string_view bytes) {
  const ByteMap& map = byteMap();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) appendUtf8(map.to_cp[static_cast<unsigned char>(c)], &out);
  return out;
}

std::optional<std::string> byteLevelDecode(std::string_view text) {
  const ByteMap& map = byteMap();
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    int len = validSequence(text.substr(i));
    if (len <= 0) return std::nullopt;
    uint32_t cp;
    auto c0 = static_cast<unsigned char>(text[i]);
    if (len == 1) {
      cp = c0;
    } else if (len == 2) {
      cp = ((c0 & 0x1F) << 6) | (static_cast<unsigned char>(text[i + 1]) & 0x3F);
    } else {
      return std::nullopt;  // every stand-in is below U+0800
    }
    if (cp >= map.from_cp.size() || map.from_cp[cp] < 0) return std::nullopt;
    out.push_back(static_cast<char>(map.from_cp[cp]));
    i += len;
  }
  return out;
}

std::optional<uint8_t> parseByteToken(std::string_view token) {
  if (token.size() != 6 || token.substr(0, 3) != "<0x" || token[5] != '>') return std::nullopt;
  int hi = hexValue(token[3]), lo = hexValue(token[4]);
  if (hi < 0 || lo < 0) return std::nullopt;
  return static_cast<uint8_t>(hi * 16 + lo);
}

std::string byteTokenName(uint8_t byte) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  return std::string{'<', '0', 'x', kHex[byte >> 4], kHex[byte & 15], '>'};
}

size_t completeUtf8Prefix(std::string_view bytes) {
  // only the last three bytes can belong to an unfinished character.
  size_t start = bytes.size() > 3 ? bytes.size() - 3 : 0;
  for (size_t i = start; i < bytes.size(); ++i) {
    auto c = static_cast<unsigned char>(bytes[i]);
    if ((c & 0xC0) == 0x80) continue;
    if (validSequence(bytes.substr(i)) == 0) return i;
  }
  return bytes.size();
}

std::string sanitizeUtf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    int len = validSequence(bytes.substr(i));
    if (len > 0) {
      out.append(bytes.substr(i, len));
      i += len;
    } else {
      out.append("\xEF\xBF\xBD");
      ++i;
      // a run of continuation bytes after a bad lead is one error
      while (i < bytes.size() && (static_cast<unsigned char>(bytes[i]) & 0xC0) == 0x80 &&
             len == 0) ++i;
    }
  }
  return out;
}

}  // namespace tandem::tokenizer
