// The load predictors by name (`--predictor`): "constant"
// (constant_predictor.h), "moving-average" (moving_average_predictor.h),
// "holt-winters" (holt_winters_predictor.h), each with its defaults.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "planner/load_predictor.h"

namespace tandem::planner {

struct PredictorOptions {
  int window = 6;         // moving-average: intervals averaged
  int horizon = 1;        // holt-winters: intervals ahead (new workers' cold start / interval)
  int season_length = 0;  // holt-winters: intervals in a season; 0 = none
};

// the predictor named `name`, or null for a name not in predictorNames().
std::unique_ptr<LoadPredictor> makePredictor(std::string_view name, const PredictorOptions& options = {});

// the names makePredictor knows, for a flag's check.
const std::vector<std::string>& predictorNames();

}  // namespace tandem::planner
