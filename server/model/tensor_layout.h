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

// Mixtures of experts. Canonical names are Qwen3-MoE's HF names: the router
// model.layers.N.mlp.gate.weight [experts, hidden] and each expert's
// model.layers.N.mlp.experts.E.{gate,up,down}_proj.weight. llama.cpp
// stacks a layer's experts in one 3-D tensor, blk.N.ffn_{gate,up,down}_exps
// ([experts, ffn, hidden], down [experts, hidden, ffn]): expert E is its
// E-th slice.
inline constexpr const char* kExpertProjections[] = {"gate_proj", "up_proj", "down_proj"};
// "model.layers.N.mlp.experts.E.<proj>.weight"
std::string expertTensorName(int layer, int expert, std::string_view proj);
// blk.N.ffn_{gate,up,down}_exps.weight -> layer N and "gate_proj" etc.;
// false for any other name.
bool parseStackedExperts(std::string_view gguf_name, int* layer, std::string* proj);
// the stacked GGUF name of a layer's projection ("gate_proj" -> "blk.N.ffn_gate_exps.weight").
std::string stackedExpertsName(int layer, std::string_view proj);
// Mixtral's HF names (block_sparse_moe.gate, experts.E.w1 / w3 / w2) to the
// canonical ones and back; other names unchanged.
std::string canonicalFromMixtral(std::string_view hf_name);
std::string mixtralFromCanonical(std::string_view name);

}  // namespace tandem::model
