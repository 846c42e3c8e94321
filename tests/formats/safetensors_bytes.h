// The bytes of a safetensors file built by hand, for tests that feed the
// reader malformed or edited files.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace tandem::testing {

// a safetensors file: the little-endian header length, the header JSON and
// `data_bytes` zero bytes of data.
inline std::string safetensorsBytes(const std::string& header, size_t data_bytes) {
  std::string s(8, '\0');
  uint64_t len = header.size();
  std::memcpy(s.data(), &len, 8);
  return s + header + std::string(data_bytes, '\0');
}

}  // namespace tandem::testing
