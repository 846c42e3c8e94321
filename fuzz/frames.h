// Splits a fuzz input into messages: each a 2-byte little-endian length and
// that many bytes (the last one takes what is left when shorter). Used by the
// targets that feed a receiver a sequence of a peer's messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace tandem::fuzz {

inline std::vector<std::string_view> splitFrames(const uint8_t* data, size_t size) {
  std::vector<std::string_view> frames;
  size_t pos = 0;
  while (pos + 2 <= size) {
    size_t len = data[pos] | (static_cast<size_t>(data[pos + 1]) << 8);
    pos += 2;
    if (len > size - pos) len = size - pos;
    frames.emplace_back(reinterpret_cast<const char*>(data + pos), len);
    pos += len;
  }
  return frames;
}

}  // namespace tandem::fuzz
