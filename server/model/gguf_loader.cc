#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "server/model/tensor_layout.h"
#include "server/model/weight_loaders.h"

namespace tandem::model {

absl::StatusOr<ModelWeightsPtr> GgufLoader::load(const std::string& path) {
  ASSIGN_OR_RETURN(GgufFilePtr gguf, GgufFile::open(path));
  ASSIGN_OR_RETURN(ModelConfig config, ModelConfig::fromGguf(*gguf));
  auto weights = ModelWeightsPtr(new ModelWeights());
  weights->path_ = path;
  weights->format_ = ModelFormat::kGguf;
  weights->config_ = config;
  weights->gguf_ = gguf;
  weights->files_.push_back(gguf->file());
  for (const GgufTensorInfo& t : gguf->tensors()) {
    // a layer's stacked experts [experts, rows, cols]: one view a slice
    int layer = 0;
    std::string proj;
    if (config.isMoe() && parseStackedExperts(t.name, &layer, &proj)) {
      const int experts = config.num_experts;
      if (t.shape.size() != 3 || t.shape[0] != experts || t.bytes % experts != 0) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": tensor ", t.name, " has shape ",
                                                       shapeString(t.shape), ", expected [", experts,
                                                       ", rows, cols]"));
      }
      const size_t slice = t.bytes / experts;
      for (int e = 0; e < experts; ++e) {
        weights->tensors_[expertTensorName(layer, e, proj)] =
            TensorView{t.dtype, {t.shape[1], t.shape[2]}, reinterpret_cast<const char*>(t.data) + e * slice, slice};
      }
      continue;
    }
    // tensors outside the Llama family's set keep their llama.cpp name.
    std::string name = hfNameFromGguf(t.name);
    if (name.empty()) name = t.name;
    weights->tensors_[name] = TensorView{t.dtype, t.shape, t.data, t.bytes};
  }
  RETURN_IF_ERROR(checkExpectedTensors(config, weights->tensors_, [&](const std::string& name) {
    std::string gguf_name = ggufNameFromHf(name);
    return gguf_name.empty() ? path : absl::StrCat(path, " (", gguf_name, ")");
  }));
  return weights;
}

}  // namespace tandem::model
