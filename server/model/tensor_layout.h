// The tensors a Llama-family config implies, under their canonical (HF)
// names, and the mapping between those names and llama.cpp's GGUF names.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/model/model_config.h"

namespace tandem::model {

struct ExpectedTensor {
  std::string name;             // HF name, e.g. model.layers.0.self_attn.q_proj.weight
  std::vector<int64_t> shape;   // row-major; linear weights are [out, in]
  bool is_norm = false;         // an RMSNorm weight (synthesized as ones)
  bool is_bias = false;         // a projection bias (synthesized as zeros)
};

// every tensor the model needs, in file order (embeddings, then layer by
// layer, then the final norm and lm_head). lm_head.weight is listed only
// when the embeddings are not tied.
std::vector<ExpectedTensor> expectedTensors(const ModelConfig& config);

// "[512, 64]", for messages.
std::string shapeString(const std::vector<int64_t>& shape);

// llama.cpp name -> HF name ("blk.3.attn_q.weight" ->
// "model.layers.3.self_attn.q_proj.weight"); empty when the name is not one
// of the Llama-family tensors.
std::string hfNameFromGguf(std::string_view gguf_name);
// HF name -> llama.cpp name; empty when unknown.
std::string ggufNameFromHf(std::string_view hf_name);

}  // namespace tandem::model
