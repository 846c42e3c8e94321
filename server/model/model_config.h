// The architecture hyper-parameters of a Llama-family model, independent of
// the file format it was read from.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tandem::model {

class GgufFile;

// kLlama3: an HF config's llama3 rope_scaling (parameters below, and the
// per-pair factors they imply); kFreqFactors: a GGUF rope_freqs.weight
// tensor, which holds the per-pair factors alone (llama.cpp's converter
// bakes llama3 scaling into it and keeps no parameters).
enum class RopeScaling : uint8_t { kNone, kLlama3, kFreqFactors };

// How rotary pairs are formed. HF checkpoints use rotate-half (dims i and
// i + head_dim/2, "neox"); llama.cpp's GGUF llama layout keeps Meta's
// interleaved pairs (2i, 2i+1, "norm"). Loading keeps the file's layout
// (zero copy) and records which one it is here.
enum class RopeStyle : uint8_t { kHalf, kInterleaved };

struct ModelConfig {
  // "llama", "mistral", "qwen2", "qwen3", and the mixtures of experts
  // "qwen3moe" (Qwen3-MoE) and "mixtral" (a GGUF "llama" with experts)
  std::string architecture;
  int hidden_size = 0;
  int intermediate_size = 0;
  int num_layers = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int vocab_size = 0;
  int max_position_embeddings = 0;
  float rms_norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  RopeStyle rope_style = RopeStyle::kHalf;
  RopeScaling rope_scaling = RopeScaling::kNone;
  // llama3 scaling parameters (used when rope_scaling == kLlama3)
  float rope_factor = 1.0f;
  float rope_low_freq_factor = 1.0f;
  float rope_high_freq_factor = 4.0f;
  int rope_original_max_position = 8192;
  // head_dim / 2 divisors of the rotary inverse frequencies: pair i rotates
  // by position * base_inv_freq[i] / rope_freq_factors[i]. Set whenever
  // rope_scaling is not kNone, so a runner needs nothing else; empty
  // otherwise.
  std::vector<float> rope_freq_factors;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // qwen2: q/k/v projections have biases
  bool qk_norm = false;         // qwen3: RMSNorm over each head of q and k
  // a mixture of experts in every layer's FFN (num_experts > 0): a router
  // [num_experts, hidden] picks num_experts_used experts a token by softmax
  // probability (renormalized over the chosen when norm_topk_prob), each an
  // FFN of moe_intermediate_size. No shared expert, no group-limited routing.
  int num_experts = 0;
  int num_experts_used = 0;
  int moe_intermediate_size = 0;
  bool norm_topk_prob = true;
  int bos_token_id = -1;
  std::vector<int> eos_token_ids;

  // reads `dir`/config.json (and generation_config.json for extra eos ids).
  // Errors name the file: invalid JSON, a field of the wrong type, an
  // unsupported architecture or rope scaling. The result is validated.
  static absl::StatusOr<ModelConfig> fromHfDir(const std::string& dir);
  // parses the text of a config.json; `source` names it in errors.
  static absl::StatusOr<ModelConfig> fromHfJson(const std::string& json_text,
                                                const std::string& source);
  // reads general.architecture and the <arch>.* keys of a GGUF file, plus the
  // token embedding shape (vocab size) and which tensors exist (bias, tied
  // output). The result is validated.
  static absl::StatusOr<ModelConfig> fromGguf(const GgufFile& gguf);

  // the llama3 per-pair factors for this config's theta, head_dim and llama3
  // parameters, computed as llama.cpp's convert_hf_to_gguf.py writes them
  // into rope_freqs.weight: 1 for short wavelengths, rope_factor for long
  // ones, 1 / ((1 - s) / factor + s) between.
  std::vector<float> llama3RopeFreqFactors() const;

  bool isMoe() const { return num_experts > 0; }
  // the weights one token's forward pass reads: every tensor but the
  // experts a token does not choose (num_experts_used of num_experts) and
  // the embedding table's other rows.
  int64_t activeParameterCount() const;

  // checks that the shapes are positive and consistent (heads divide, etc).
  absl::Status validate() const;
  // the number of weights the tensors of this config hold (lm_head only when
  // untied).
  int64_t parameterCount() const;
};

}  // namespace tandem::model
