// The format-specific halves of ModelWeights::load (internal to the model
// library). Each fills a ModelWeights from one format and leaves the shape
// check against the config to checkExpectedTensors().
#pragma once

#include <functional>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "server/model/weights.h"

namespace tandem::model {

// an HF directory: config.json, generation_config.json, and model.safetensors
// or model.safetensors.index.json with its shards.
class HfLoader {
 public:
  static absl::StatusOr<ModelWeightsPtr> load(const std::string& dir);
};

// a single .gguf file; tensors are renamed to their HF names.
class GgufLoader {
 public:
  static absl::StatusOr<ModelWeightsPtr> load(const std::string& path);
};

// checks that every tensor `config` implies is in `tensors` with its exact
// shape and a float dtype. `where(name)` names the file holding a tensor (or
// the model path when absent) and any alias (its GGUF name) for messages.
absl::Status checkExpectedTensors(const ModelConfig& config,
                                  const std::map<std::string, TensorView>& tensors,
                                  const std::function<std::string(const std::string&)>& where);

}  // namespace tandem::model
