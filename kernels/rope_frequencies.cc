#include "kernels/rope_frequencies.h"

#include <cmath>

#include "common/status.h"

namespace tandem::kernels {

std::vector<float> ropeInverseFrequencies(const RopeParams& params) {
  TANDEM_CHECK(params.head_dim > 0 && params.head_dim % 2 == 0);
  const int half = params.head_dim / 2;
  std::vector<float> inv(half);
  for (int i = 0; i < half; ++i) {
    // HF computes base ** (2i / d) in float32; the double here rounds the
    // same way for every theta and dimension in use.
    inv[i] = static_cast<float>(1.0 / std::pow(static_cast<double>(params.theta),
                                               2.0 * i / params.head_dim));
  }
  if (!params.freq_factors.empty()) {
    TANDEM_CHECK(static_cast<int>(params.freq_factors.size()) == half);
    for (int i = 0; i < half; ++i) inv[i] /= params.freq_factors[i];
    return inv;
  }
  if (!params.llama3_scaling) return inv;
  const double old_len = params.original_max_position;
  const double low_wavelen = old_len / params.low_freq_factor;
  const double high_wavelen = old_len / params.high_freq_factor;
  for (int i = 0; i < half; ++i) {
    const double f = inv[i];
    const double wavelen = 2.0 * M_PI / f;
    double scaled;
    if (wavelen < high_wavelen) {
      scaled = f;
    } else if (wavelen > low_wavelen) {
      scaled = f / params.factor;
    } else {
      // smooth interpolation between the scaled and unscaled bands
      const double smooth = (old_len / wavelen - params.low_freq_factor) /
                            (params.high_freq_factor - params.low_freq_factor);
      scaled = (1.0 - smooth) * f / params.factor + smooth * f;
    }
    inv[i] = static_cast<float>(scaled);
  }
  return inv;
}

}  // namespace tandem::kernels
