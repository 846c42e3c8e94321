// A loaded model: its config and named weight tensors, whatever the file
// format. Tensor names are the HF (transformers) names; the GGUF loader maps
// llama.cpp's names onto them (token_embd.weight -> model.embed_tokens.weight,
// blk.N.attn_q.weight -> model.layers.N.self_attn.q_proj.weight, ...).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/dtype.h"
#include "common/mapped_file.h"
#include "formats/gguf_file.h"
#include "server/model/model_config.h"

namespace tandem::model {

struct TensorView {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // row-major; linear weights are [out, in]
  const void* data = nullptr;  // points into a mapping or owned storage
  size_t bytes = 0;

  int64_t numel() const;
};

enum class ModelFormat : uint8_t { kHfDir, kGguf };

class ModelWeights;
using ModelWeightsPtr = std::unique_ptr<ModelWeights>;

class ModelWeights {
 public:
  // loads an HF model directory or a .gguf file. Tensors stay in the file
  // mapping (zero copy). Every tensor the architecture needs must be present
  // with the shape the config implies; errors name the file and tensor.
  static absl::StatusOr<ModelWeightsPtr> load(const std::string& path);
  // what load() first checks, cheaply, without reading weights: the path
  // exists and is readable, a directory holds config.json (an HF model), a
  // file starts with the GGUF magic. NotFound / InvalidArgument naming the
  // path; for a directory that is not a model, the models found in it (one
  // level down) as suggestions.
  static absl::Status checkPath(const std::string& path);

  const ModelConfig& config() const { return config_; }
  ModelFormat format() const { return format_; }
  const std::string& path() const { return path_; }
  // the GGUF file, for GGUF models (its embedded vocabulary); else null.
  const GgufFilePtr& gguf() const { return gguf_; }

  // NotFound naming the tensor when absent.
  absl::StatusOr<const TensorView*> tensor(const std::string& name) const;
  const TensorView* find(const std::string& name) const;
  const std::map<std::string, TensorView>& tensors() const { return tensors_; }
  uint64_t totalBytes() const;

 private:
  friend class HfLoader;
  friend class GgufLoader;
  ModelWeights() = default;

  std::string path_;
  ModelFormat format_ = ModelFormat::kHfDir;
  ModelConfig config_;
  std::map<std::string, TensorView> tensors_;
  std::vector<MappedFilePtr> files_;
  GgufFilePtr gguf_;
};

// a human-readable summary for `tandem model inspect`: architecture, format,
// every config field, tensor counts per dtype, parameter count, total bytes,
// and what the files say about the tokenizer and chat template (without
// loading the tokenizer).
std::string describeModel(const ModelWeights& weights);

}  // namespace tandem::model
