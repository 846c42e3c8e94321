// The per-request random generator of the sampler: splitmix64 (Steele,
// Lea and Flood 2014), chosen over std:: engines and distributions because
// its output is specified bit for bit, so a seed gives the same tokens on
// every platform and standard library.
#pragma once

#include <cstdint>

namespace tandem::engine {

class SamplerRng {
 public:
  explicit SamplerRng(uint64_t seed = 0) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  // uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

}  // namespace tandem::engine
