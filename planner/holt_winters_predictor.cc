#include "planner/holt_winters_predictor.h"

#include <algorithm>
#include <numeric>

namespace tandem::planner {

HoltWintersPredictor::HoltWintersPredictor(HoltWintersOptions options) : options_(options) {
  if (options_.season_length > 0) season_.assign(options_.season_length, 0.0);
}

void HoltWintersPredictor::observe(const LoadSample& sample) {
  last_ = sample;
  const double y = sample.request_rate;
  const int m = options_.season_length;
  if (m > 0 && observed_ < m) {
    // the first season seeds level and season; trend starts flat.
    first_season_.push_back(y);
    ++observed_;
    if (observed_ == m) {
      level_ = std::accumulate(first_season_.begin(), first_season_.end(), 0.0) / m;
      for (int i = 0; i < m; ++i) season_[i] = first_season_[i] - level_;
    } else {
      level_ = y;
    }
  } else if (observed_ == 0) {
    level_ = y;
    ++observed_;
  } else {
    const int pos = m > 0 ? observed_ % m : 0;
    const double s = m > 0 ? season_[pos] : 0;
    const double prev = level_;
    level_ = options_.alpha * (y - s) + (1 - options_.alpha) * (level_ + trend_);
    trend_ = options_.beta * (level_ - prev) + (1 - options_.beta) * trend_;
    if (m > 0) season_[pos] = options_.gamma * (y - level_) + (1 - options_.gamma) * s;
    ++observed_;
  }
  if (sample.request_rate > 0) {
    if (!have_tokens_) {
      isl_ = sample.mean_input_tokens;
      osl_ = sample.mean_output_tokens;
      cached_ = sample.cached_fraction;
      have_tokens_ = true;
    } else {
      const double a = options_.alpha;
      isl_ = a * sample.mean_input_tokens + (1 - a) * isl_;
      osl_ = a * sample.mean_output_tokens + (1 - a) * osl_;
      cached_ = a * sample.cached_fraction + (1 - a) * cached_;
    }
  }
}

LoadSample HoltWintersPredictor::predict() const {
  if (observed_ == 0) return {};
  LoadSample out = last_;
  const int h = std::max(1, options_.horizon);
  const int m = options_.season_length;
  double rate;
  if (m > 0 && observed_ < m) {
    rate = last_.request_rate;  // no season seen yet
  } else {
    rate = level_ + h * trend_ + (m > 0 ? season_[(observed_ + h - 1) % m] : 0);
  }
  out.request_rate = std::max(0.0, rate);
  if (have_tokens_) {
    out.mean_input_tokens = std::max(0.0, isl_);
    out.mean_output_tokens = std::max(0.0, osl_);
    out.cached_fraction = std::clamp(cached_, 0.0, 1.0);
  }
  return out;
}

}  // namespace tandem::planner
