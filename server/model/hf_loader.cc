#include <filesystem>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "formats/safetensors_file.h"
#include "nlohmann/json.hpp"
#include "server/model/tensor_layout.h"
#include "server/model/weight_loaders.h"

namespace tandem::model {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// the shard files an index names, in order of first mention. A shard name
// must be a plain file name in the model directory.
absl::StatusOr<std::vector<std::string>> shardsFromIndex(const std::string& index_path) {
  ASSIGN_OR_RETURN(std::string text, readFile(index_path));
  json index = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (index.is_discarded() || !index.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(index_path, ": invalid JSON"));
  }
  auto map = index.find("weight_map");
  if (map == index.end() || !map->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(index_path, ": no weight_map object"));
  }
  std::vector<std::string> shards;
  std::set<std::string> seen;
  for (const auto& [tensor, file] : map->items()) {
    if (!file.is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(index_path, ": weight_map entry for ", tensor, " is not a file name"));
    }
    std::string name = file.get<std::string>();
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
      return absl::InvalidArgumentError(
          absl::StrCat(index_path, ": invalid shard name \"", name, "\" for ", tensor));
    }
    if (seen.insert(name).second) shards.push_back(name);
  }
  return shards;
}

}  // namespace

absl::StatusOr<ModelWeightsPtr> HfLoader::load(const std::string& dir) {
  ASSIGN_OR_RETURN(ModelConfig config, ModelConfig::fromHfDir(dir));
  std::vector<std::string> shards;
  const std::string index_path = (fs::path(dir) / "model.safetensors.index.json").string();
  if (fs::exists(index_path)) {
    ASSIGN_OR_RETURN(shards, shardsFromIndex(index_path));
  } else if (fs::exists(fs::path(dir) / "model.safetensors")) {
    shards.push_back("model.safetensors");
  } else {
    return absl::NotFoundError(absl::StrCat(
        dir, ": no model.safetensors or model.safetensors.index.json in the directory"));
  }
  auto weights = ModelWeightsPtr(new ModelWeights());
  weights->path_ = dir;
  weights->format_ = ModelFormat::kHfDir;
  weights->config_ = config;
  std::map<std::string, std::string> tensor_file;
  for (const std::string& shard : shards) {
    ASSIGN_OR_RETURN(SafetensorsFilePtr st, SafetensorsFile::open((fs::path(dir) / shard).string()));
    for (const auto& [file_name, t] : st->tensors()) {
      // Mixtral's experts under the canonical (Qwen3-MoE) names
      const std::string name =
          config.architecture == "mixtral" ? canonicalFromMixtral(file_name) : file_name;
      auto [it, inserted] = tensor_file.emplace(name, st->path());
      if (!inserted) {
        return absl::InvalidArgumentError(absl::StrCat(
            st->path(), ": tensor ", name, " is also in ", it->second));
      }
      weights->tensors_[name] = TensorView{t.dtype, t.shape, t.data, t.bytes};
    }
    weights->files_.push_back(st->file());
  }
  RETURN_IF_ERROR(checkExpectedTensors(
      config, weights->tensors_, [&](const std::string& name) {
        auto it = tensor_file.find(name);
        if (it != tensor_file.end()) return it->second;
        return shards.size() == 1 ? (fs::path(dir) / shards[0]).string() : dir;
      }));
  return weights;
}

}  // namespace tandem::model
