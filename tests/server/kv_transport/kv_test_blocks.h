// Deterministic block contents and hashes shared by the kv_transport tests
// and their sender child process, so D can check every byte P sent without
// the bytes crossing any other channel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tandem::kv_transport::testing {

inline uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// the bytes of P's source block `src_id` under `seed`.
inline void fillBlock(uint64_t seed, int src_id, char* out, size_t bytes) {
  uint64_t s = seed * 1000003 + static_cast<uint64_t>(src_id);
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t v = splitmix(s);
    std::memcpy(out + i, &v, 8);
  }
  uint64_t v = splitmix(s);
  std::memcpy(out + i, &v, bytes - i);
}

// the prefix hash D expects for transfer index `index`.
inline uint64_t hashFor(uint64_t seed, int index) {
  uint64_t s = seed ^ (static_cast<uint64_t>(index) << 32);
  return splitmix(s);
}

inline std::string joinInts(const std::vector<int>& v) {
  std::string out;
  for (int x : v) {
    if (!out.empty()) out += ',';
    out += std::to_string(x);
  }
  return out;
}

}  // namespace tandem::kv_transport::testing
