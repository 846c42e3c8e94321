#include "server/model/weights.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "server/model/tensor_layout.h"
#include "server/model/weight_loaders.h"

namespace tandem::model {

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

namespace fs = std::filesystem;

// the models one level inside `dir` (relative paths), for a suggestion.
std::vector<std::string> modelsInside(const fs::path& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const fs::path rel = e.path().lexically_relative(dir);
    if (e.is_directory(ec) && fs::exists(e.path() / "config.json", ec)) {
      found.push_back(rel.string() + "/");
    } else if (e.is_directory(ec)) {
      for (const fs::directory_entry& f : fs::directory_iterator(e.path(), ec)) {
        if (f.path().extension() == ".gguf") found.push_back((rel / f.path().filename()).string());
      }
    } else if (e.path().extension() == ".gguf") {
      found.push_back(rel.string());
    }
    if (found.size() >= 4) break;
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace

absl::Status ModelWeights::checkPath(const std::string& path) {
  std::error_code ec;
  if (path.empty()) return absl::InvalidArgumentError("no model path given");
  if (fs::is_directory(path, ec)) {
    if (fs::exists(fs::path(path) / "config.json", ec)) return absl::OkStatus();
    std::string message = absl::StrCat(path, ": a directory without config.json is not an HF model");
    const std::vector<std::string> inside = modelsInside(path);
    if (!inside.empty()) {
      absl::StrAppend(&message, "; models in it: ", absl::StrJoin(inside, ", "));
    }
    return absl::InvalidArgumentError(message);
  }
  if (!fs::exists(path, ec)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such model file or directory"));
  }
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  if (!in.read(magic, sizeof(magic))) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": cannot read it as a model file"));
  }
  if (std::string_view(magic, 4) != "GGUF") {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": not a GGUF file (a model is a .gguf file or an HF directory with config.json)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ModelWeightsPtr> ModelWeights::load(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    RETURN_IF_ERROR(checkPath(path));
    return HfLoader::load(path);
  }
  if (!std::filesystem::exists(path, ec)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such model file or directory"));
  }
  if (std::filesystem::path(path).extension() == ".safetensors") {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": pass the HF model directory (with config.json), not the .safetensors file"));
  }
  // anything else must be a GGUF file; its parser checks the magic.
  return GgufLoader::load(path);
}

absl::StatusOr<const TensorView*> ModelWeights::tensor(const std::string& name) const {
  const TensorView* t = find(name);
  if (t == nullptr) return absl::NotFoundError(absl::StrCat(path_, ": no tensor ", name));
  return t;
}

const TensorView* ModelWeights::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

uint64_t ModelWeights::totalBytes() const {
  uint64_t total = 0;
  for (const auto& [name, t] : tensors_) total += t.bytes;
  return total;
}

absl::Status checkExpectedTensors(const ModelConfig& config,
                                  const std::map<std::string, TensorView>& tensors,
                                  const std::function<std::string(const std::string&)>& where) {
  for (const ExpectedTensor& e : expectedTensors(config)) {
    auto it = tensors.find(e.name);
    if (it == tensors.end()) {
      return absl::NotFoundError(absl::StrCat(where(e.name), ": missing tensor ", e.name,
                                              " (expected shape ", shapeString(e.shape), ")"));
    }
    const TensorView& t = it->second;
    if (t.shape != e.shape) {
      return absl::InvalidArgumentError(
          absl::StrCat(where(e.name), ": tensor ", e.name, " has shape ", shapeString(t.shape),
                       ", expected ", shapeString(e.shape), " from the config"));
    }
    if (t.dtype == DType::kI32) {
      return absl::InvalidArgumentError(
          absl::StrCat(where(e.name), ": tensor ", e.name, " has integer dtype i32"));
    }
  }
  return absl::OkStatus();
}

}  // namespace tandem::model
