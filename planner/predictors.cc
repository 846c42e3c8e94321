#include "planner/predictors.h"

#include <string>

#include "planner/constant_predictor.h"
#include "planner/holt_winters_predictor.h"
#include "planner/moving_average_predictor.h"

namespace tandem::planner {

std::unique_ptr<LoadPredictor> makePredictor(std::string_view name, const PredictorOptions& options) {
  if (name == "constant") return std::make_unique<ConstantPredictor>();
  if (name == "moving-average") return std::make_unique<MovingAveragePredictor>(options.window);
  if (name == "holt-winters") {
    return std::make_unique<HoltWintersPredictor>(
        HoltWintersOptions{.season_length = options.season_length, .horizon = options.horizon});
  }
  return nullptr;
}

const std::vector<std::string>& predictorNames() {
  static const std::vector<std::string> names = {"constant", "moving-average", "holt-winters"};
  return names;
}

}  // namespace tandem::planner
