// Predicts the next interval's load from the ones observed (constant, moving
// average, Holt-Winters, ...). Pluggable: the live planner and the simulator
// take any implementation.
#pragma once

#include "planner/planner_types.h"

namespace tandem::planner {

class LoadPredictor {
 public:
  virtual ~LoadPredictor() = default;
  virtual const char* name() const = 0;
  // takes one observed interval, oldest first.
  virtual void observe(const LoadSample& sample) = 0;
  // the load expected over the next interval; before any observe(), a zero sample.
  virtual LoadSample predict() const = 0;
};

}  // namespace tandem::planner
