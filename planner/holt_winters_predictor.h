// `holt-winters`: additive Holt-Winters (level + trend, and a season of
// `season_length` intervals when > 0) on the request rate, forecast
// `horizon` intervals ahead (a planner whose new workers take a cold start
// to arrive looks as far ahead as they take). ISL, OSL and the cached
// fraction follow a level-only exponential smoothing, updated only by
// intervals that had requests. Forecasts are clamped to >= 0 (the cached
// fraction to [0, 1]); the other fields are the last interval's.
#pragma once

#include <vector>

#include "planner/load_predictor.h"

namespace tandem::planner {

struct HoltWintersOptions {
  double alpha = 0.5;  // level
  double beta = 0.2;   // trend
  double gamma = 0.3;  // season
  int season_length = 0;  // intervals in a season; 0 = no season
  int horizon = 1;        // intervals ahead
};

class HoltWintersPredictor : public LoadPredictor {
 public:
  explicit HoltWintersPredictor(HoltWintersOptions options = {});

  // LoadPredictor
  const char* name() const override { return "holt-winters"; }
  void observe(const LoadSample& sample) override;
  LoadSample predict() const override;

 private:
  const HoltWintersOptions options_;
  int observed_ = 0;
  double level_ = 0, trend_ = 0;
  std::vector<double> season_;  // additive, by position in the season
  std::vector<double> first_season_;  // the first season's rates, to seed it
  // the token fields, level only
  bool have_tokens_ = false;
  double isl_ = 0, osl_ = 0, cached_ = 0;
  LoadSample last_;
};

}  // namespace tandem::planner
