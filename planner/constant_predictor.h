// `constant`: the next interval looks like the last one (Dynamo's default).
#pragma once

#include "planner/load_predictor.h"

namespace tandem::planner {

class ConstantPredictor : public LoadPredictor {
 public:
  // LoadPredictor
  const char* name() const override { return "constant"; }
  void observe(const LoadSample& sample) override { last_ = sample; }
  LoadSample predict() const override { return last_; }

 private:
  LoadSample last_;
};

}  // namespace tandem::planner
