#include "server/model/weights.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "server/model/tensor_layout.h"
#include "server/model/weight_loaders.h"

namespace tandem::model {

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

absl::StatusOr<ModelWeightsPtr> ModelWeights::load(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return HfLoader::load(path);
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
