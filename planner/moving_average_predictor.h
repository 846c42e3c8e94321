// `moving-average`: the mean of the last `window` intervals' traffic (rate,
// ISL, OSL, cached fraction); the other fields are the last interval's.
// ISL, OSL and the cached fraction average over the intervals that had
// requests, weighted by their request rate (an idle interval says nothing
// about prompt lengths).
#pragma once

#include <deque>

#include "planner/load_predictor.h"

namespace tandem::planner {

class MovingAveragePredictor : public LoadPredictor {
 public:
  // `window` >= 1 intervals.
  explicit MovingAveragePredictor(int window = 6);

  // LoadPredictor
  const char* name() const override { return "moving-average"; }
  void observe(const LoadSample& sample) override;
  LoadSample predict() const override;

 private:
  const int window_;
  std::deque<LoadSample> samples_;
};

}  // namespace tandem::planner
