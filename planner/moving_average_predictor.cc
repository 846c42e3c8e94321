#include "planner/moving_average_predictor.h"

#include <algorithm>

namespace tandem::planner {

MovingAveragePredictor::MovingAveragePredictor(int window) : window_(std::max(1, window)) {}

void MovingAveragePredictor::observe(const LoadSample& sample) {
  samples_.push_back(sample);
  while (static_cast<int>(samples_.size()) > window_) samples_.pop_front();
}

LoadSample MovingAveragePredictor::predict() const {
  if (samples_.empty()) return {};
  LoadSample out = samples_.back();
  double rate = 0, weight = 0, isl = 0, osl = 0, cached = 0;
  for (const LoadSample& s : samples_) {
    rate += s.request_rate;
    if (s.request_rate <= 0) continue;
    weight += s.request_rate;
    isl += s.request_rate * s.mean_input_tokens;
    osl += s.request_rate * s.mean_output_tokens;
    cached += s.request_rate * s.cached_fraction;
  }
  out.request_rate = rate / static_cast<double>(samples_.size());
  if (weight > 0) {
    out.mean_input_tokens = isl / weight;
    out.mean_output_tokens = osl / weight;
    out.cached_fraction = cached / weight;
  }
  return out;
}

}  // namespace tandem::planner
