#include "server/model/model_config.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "common/mapped_file.h"
#include "common/status.h"
#include "formats/gguf_file.h"
#include "nlohmann/json.hpp"
#include "server/model/tensor_layout.h"

namespace tandem::model {

namespace {

using nlohmann::json;

constexpr char kSupported[] = "llama, mistral, qwen2, qwen3, qwen3moe, mixtral";

bool knownArchitecture(const std::string& a) {
  return a == "llama" || a == "mistral" || a == "qwen2" || a == "qwen3" || a == "qwen3moe" ||
         a == "mixtral";
}

// the HF model_type of the supported architectures, where it differs.
std::string archFromModelType(const std::string& t) {
  if (t == "qwen3_moe") return "qwen3moe";
  return t;
}

// typed reads of optional config.json fields: a missing or null field keeps
// the default, a field of the wrong type is an error naming it.
class JsonFields {
 public:
  JsonFields(const json& j, const std::string& source) : j_(j), source_(source) {}

  const json* get(const char* key) const {
    auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  absl::Status readInt(const char* key, int* out) const {
    const json* v = get(key);
    if (v == nullptr) return absl::OkStatus();
    if (!v->is_number_integer()) return wrong(key, "an integer");
    int64_t x = v->get<int64_t>();
    if (x < INT32_MIN || x > INT32_MAX) return wrong(key, "a 32-bit integer");
    *out = static_cast<int>(x);
    return absl::OkStatus();
  }
  absl::Status readFloat(const char* key, float* out) const {
    const json* v = get(key);
    if (v == nullptr) return absl::OkStatus();
    if (!v->is_number()) return wrong(key, "a number");
    *out = v->get<float>();
    return absl::OkStatus();
  }
  absl::Status readBool(const char* key, bool* out) const {
    const json* v = get(key);
    if (v == nullptr) return absl::OkStatus();
    if (!v->is_boolean()) return wrong(key, "a bool");
    *out = v->get<bool>();
    return absl::OkStatus();
  }
  // eos_token_id: an integer or a list of integers; appends new ids.
  absl::Status readIds(const char* key, std::vector<int>* out) const {
    const json* v = get(key);
    if (v == nullptr) return absl::OkStatus();
    std::vector<json> items = v->is_array() ? v->get<std::vector<json>>() : std::vector<json>{*v};
    for (const json& item : items) {
      if (!item.is_number_integer()) return wrong(key, "an integer or a list of integers");
      int id = item.get<int>();
      if (std::find(out->begin(), out->end(), id) == out->end()) out->push_back(id);
    }
    return absl::OkStatus();
  }
  absl::Status wrong(const char* key, const char* want) const {
    return absl::InvalidArgumentError(
        absl::StrCat(source_, ": field \"", key, "\" must be ", want));
  }

 private:
  const json& j_;
  const std::string& source_;
};

absl::StatusOr<std::string> hfArchitecture(const json& j, const std::string& source) {
  std::string arch;
  if (auto it = j.find("model_type"); it != j.end() && it->is_string()) {
    arch = archFromModelType(*it);
  }
  if (arch.empty()) {
    auto it = j.find("architectures");
    if (it != j.end() && it->is_array() && !it->empty() && (*it)[0].is_string()) {
      std::string cls = (*it)[0];
      if (cls == "LlamaForCausalLM") arch = "llama";
      else if (cls == "MistralForCausalLM") arch = "mistral";
      else if (cls == "Qwen2ForCausalLM") arch = "qwen2";
      else if (cls == "Qwen3ForCausalLM") arch = "qwen3";
      else if (cls == "Qwen3MoeForCausalLM") arch = "qwen3moe";
      else if (cls == "MixtralForCausalLM") arch = "mixtral";
      else arch = cls;
    }
  }
  if (arch.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": no model_type or architectures field"));
  }
  if (!knownArchitecture(arch)) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": unsupported architecture \"",
                                                   arch, "\" (supported: ", kSupported, ")"));
  }
  return arch;
}

// what a mixture-of-experts config may ask that tandem does not compute,
// each refused naming its field: a shared expert (Qwen2-MoE, DeepSeek),
// group-limited routing (DeepSeek-V3), multi-head latent attention (MLA),
// dense layers among the sparse ones.
absl::Status refuseUnsupportedMoe(const json& j, const std::string& source) {
  struct Feature {
    const char* field;
    const char* what;
  };
  for (Feature f : {Feature{"shared_expert_intermediate_size", "a shared expert"},
                    Feature{"n_shared_experts", "a shared expert"},
                    Feature{"n_group", "group-limited expert routing"},
                    Feature{"topk_group", "group-limited expert routing"},
                    Feature{"kv_lora_rank", "multi-head latent attention (MLA)"},
                    Feature{"q_lora_rank", "multi-head latent attention (MLA)"},
                    Feature{"first_k_dense_replace", "dense layers among the expert layers"}}) {
    auto it = j.find(f.field);
    if (it == j.end() || it->is_null()) continue;
    // 0 (or 1 group) is the feature switched off
    if (it->is_number_integer() && it->get<int64_t>() <= (std::string_view(f.field).ends_with("group") ? 1 : 0)) {
      continue;
    }
    return absl::UnimplementedError(absl::StrCat(source, ": field \"", f.field, "\" asks for ",
                                                 f.what, ", which tandem does not support"));
  }
  if (auto it = j.find("mlp_only_layers"); it != j.end() && it->is_array() && !it->empty()) {
    return absl::UnimplementedError(absl::StrCat(
        source, ": field \"mlp_only_layers\" asks for dense layers among the expert layers, "
                "which tandem does not support"));
  }
  if (auto it = j.find("decoder_sparse_step"); it != j.end() && it->is_number_integer() &&
                                               it->get<int64_t>() > 1) {
    return absl::UnimplementedError(absl::StrCat(
        source, ": field \"decoder_sparse_step\" asks for dense layers among the expert layers, "
                "which tandem does not support"));
  }
  return absl::OkStatus();
}

absl::Status readRopeScaling(const JsonFields& f, const std::string& source, ModelConfig* c) {
  const json* rs = f.get("rope_scaling");
  if (rs == nullptr) return absl::OkStatus();
  if (!rs->is_object()) return f.wrong("rope_scaling", "an object");
  std::string type;
  for (const char* k : {"rope_type", "type"}) {
    if (auto it = rs->find(k); it != rs->end() && it->is_string()) type = *it;
  }
  if (type.empty() || type == "default") return absl::OkStatus();
  if (type != "llama3") {
    return absl::UnimplementedError(
        absl::StrCat(source, ": rope_scaling type \"", type, "\" is not supported (only llama3)"));
  }
  c->rope_scaling = RopeScaling::kLlama3;
  JsonFields s(*rs, source);
  RETURN_IF_ERROR(s.readFloat("factor", &c->rope_factor));
  RETURN_IF_ERROR(s.readFloat("low_freq_factor", &c->rope_low_freq_factor));
  RETURN_IF_ERROR(s.readFloat("high_freq_factor", &c->rope_high_freq_factor));
  return s.readInt("original_max_position_embeddings", &c->rope_original_max_position);
}

absl::StatusOr<json> parseJson(const std::string& text, const std::string& source) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(source, ": invalid JSON"));
  if (!j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": expected a JSON object"));
  }
  return j;
}

absl::StatusOr<ModelConfig> parseHf(const json& j, const std::string& source) {
  ModelConfig c;
  RETURN_IF_ERROR(refuseUnsupportedMoe(j, source));
  ASSIGN_OR_RETURN(c.architecture, hfArchitecture(j, source));
  JsonFields f(j, source);
  c.rms_norm_eps = 1e-6f;  // the transformers default for all four
  c.max_position_embeddings = 2048;
  c.attention_bias = c.architecture == "qwen2";
  c.qk_norm = c.architecture == "qwen3" || c.architecture == "qwen3moe";
  RETURN_IF_ERROR(f.readInt("hidden_size", &c.hidden_size));
  RETURN_IF_ERROR(f.readInt("intermediate_size", &c.intermediate_size));
  RETURN_IF_ERROR(f.readInt("num_hidden_layers", &c.num_layers));
  RETURN_IF_ERROR(f.readInt("num_attention_heads", &c.num_heads));
  c.num_kv_heads = c.num_heads;
  RETURN_IF_ERROR(f.readInt("num_key_value_heads", &c.num_kv_heads));
  if (c.num_heads > 0) c.head_dim = c.hidden_size / c.num_heads;
  RETURN_IF_ERROR(f.readInt("head_dim", &c.head_dim));
  RETURN_IF_ERROR(f.readInt("vocab_size", &c.vocab_size));
  RETURN_IF_ERROR(f.readInt("max_position_embeddings", &c.max_position_embeddings));
  RETURN_IF_ERROR(f.readFloat("rms_norm_eps", &c.rms_norm_eps));
  RETURN_IF_ERROR(f.readFloat("rope_theta", &c.rope_theta));
  RETURN_IF_ERROR(readRopeScaling(f, source, &c));
  RETURN_IF_ERROR(f.readBool("tie_word_embeddings", &c.tie_word_embeddings));
  RETURN_IF_ERROR(f.readBool("attention_bias", &c.attention_bias));
  RETURN_IF_ERROR(f.readInt("bos_token_id", &c.bos_token_id));
  RETURN_IF_ERROR(f.readIds("eos_token_id", &c.eos_token_ids));
  if (c.architecture == "qwen3moe") {
    // transformers' Qwen3MoeConfig defaults (norm_topk_prob false there)
    c.num_experts = 128;
    c.num_experts_used = 8;
    c.moe_intermediate_size = 768;
    c.norm_topk_prob = false;
    RETURN_IF_ERROR(f.readInt("num_experts", &c.num_experts));
    RETURN_IF_ERROR(f.readInt("num_experts_per_tok", &c.num_experts_used));
    RETURN_IF_ERROR(f.readInt("moe_intermediate_size", &c.moe_intermediate_size));
    RETURN_IF_ERROR(f.readBool("norm_topk_prob", &c.norm_topk_prob));
  } else if (c.architecture == "mixtral") {
    // Mixtral's router renormalizes the top-k; its experts are intermediate_size wide
    c.num_experts = 8;
    c.num_experts_used = 2;
    RETURN_IF_ERROR(f.readInt("num_local_experts", &c.num_experts));
    RETURN_IF_ERROR(f.readInt("num_experts_per_tok", &c.num_experts_used));
    c.moe_intermediate_size = c.intermediate_size;
    c.norm_topk_prob = true;
  }
  if (c.rope_scaling == RopeScaling::kLlama3 && c.head_dim > 0) {
    c.rope_freq_factors = c.llama3RopeFreqFactors();
  }
  c.rope_style = RopeStyle::kHalf;
  return c;
}

// llama.cpp's rope_freqs.weight: F32 [rope dims / 2] per-pair factors.
absl::Status readRopeFreqs(const GgufTensorInfo& t, int head_dim, const std::string& source,
                           ModelConfig* c) {
  if (t.dtype != DType::kF32 || t.shape != std::vector<int64_t>{head_dim / 2}) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": rope_freqs.weight must be f32 [", head_dim / 2, "], got ",
        std::string(dtypeName(t.dtype)), " ", shapeString(t.shape)));
  }
  c->rope_freq_factors.resize(head_dim / 2);
  std::memcpy(c->rope_freq_factors.data(), t.data, c->rope_freq_factors.size() * sizeof(float));
  c->rope_scaling = RopeScaling::kFreqFactors;
  return absl::OkStatus();
}

// <arch>.expert_count, expert_used_count and (qwen3moe)
// expert_feed_forward_length; llama.cpp renormalizes the chosen experts'
// probabilities for both architectures. Keys asking for a shared expert or
// group-limited routing are refused, naming the key.
absl::Status readGgufExperts(const GgufFile& g, const std::string& p, const std::string& source,
                             ModelConfig* c) {
  for (const char* key : {"expert_shared_count", "expert_group_count", "attention.kv_lora_rank",
                          "leading_dense_block_count"}) {
    const std::string name = p + key;
    if (g.find(name) == nullptr) continue;
    auto v = g.getInt(name);
    if (v.ok() && *v <= (std::string_view(key) == "expert_group_count" ? 1 : 0)) continue;
    return absl::UnimplementedError(absl::StrCat(source, ": ", name, " asks for what tandem does not "
                                                 "support (a shared expert, group-limited routing, "
                                                 "MLA or dense leading layers)"));
  }
  const bool has_experts = g.find(p + "expert_count") != nullptr;
  if (!has_experts) {
    if (c->architecture == "qwen3moe") {
      return absl::InvalidArgumentError(absl::StrCat(source, ": ", p, "expert_count is missing"));
    }
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(int64_t experts, g.getInt(p + "expert_count"));
  if (experts == 0 && c->architecture == "llama") return absl::OkStatus();  // a dense llama
  int64_t used = 0;
  if (g.find(p + "expert_used_count") != nullptr) {
    ASSIGN_OR_RETURN(used, g.getInt(p + "expert_used_count"));
  }
  if (experts <= 0 || experts > 4096 || used <= 0 || used > experts) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", p, "expert_count = ", experts, ", ",
                                                   p, "expert_used_count = ", used,
                                                   " (want 0 < used <= count <= 4096)"));
  }
  c->num_experts = static_cast<int>(experts);
  c->num_experts_used = static_cast<int>(used);
  c->moe_intermediate_size = c->intermediate_size;
  if (g.find(p + "expert_feed_forward_length") != nullptr) {
    ASSIGN_OR_RETURN(int64_t f, g.getInt(p + "expert_feed_forward_length"));
    if (f <= 0 || f > INT32_MAX) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": ", p, "expert_feed_forward_length = ", f,
                                                     " is out of range"));
    }
    c->moe_intermediate_size = static_cast<int>(f);
  }
  c->norm_topk_prob = true;
  return absl::OkStatus();
}

absl::Status validateAs(const ModelConfig& c, const std::string& source) {
  absl::Status s = c.validate();
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(source, ": ", s.message()));
}

}  // namespace

absl::StatusOr<ModelConfig> ModelConfig::fromHfJson(const std::string& json_text,
                                                    const std::string& source) {
  ASSIGN_OR_RETURN(json j, parseJson(json_text, source));
  absl::StatusOr<ModelConfig> c;
  try {
    c = parseHf(j, source);
  } catch (const std::exception& e) {  // nlohmann conversions we did not foresee
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", e.what()));
  }
  if (!c.ok()) return c.status();
  RETURN_IF_ERROR(validateAs(*c, source));
  return c;
}

absl::StatusOr<ModelConfig> ModelConfig::fromHfDir(const std::string& dir) {
  std::string path = (std::filesystem::path(dir) / "config.json").string();
  ASSIGN_OR_RETURN(std::string text, readFile(path));
  ASSIGN_OR_RETURN(ModelConfig c, fromHfJson(text, path));
  std::string gen_path = (std::filesystem::path(dir) / "generation_config.json").string();
  if (std::filesystem::exists(gen_path)) {
    ASSIGN_OR_RETURN(std::string gen_text, readFile(gen_path));
    ASSIGN_OR_RETURN(json g, parseJson(gen_text, gen_path));
    JsonFields f(g, gen_path);
    try {
      RETURN_IF_ERROR(f.readIds("eos_token_id", &c.eos_token_ids));
      if (c.bos_token_id < 0) RETURN_IF_ERROR(f.readInt("bos_token_id", &c.bos_token_id));
    } catch (const std::exception& e) {
      return absl::InvalidArgumentError(absl::StrCat(gen_path, ": ", e.what()));
    }
  }
  return c;
}

absl::StatusOr<ModelConfig> ModelConfig::fromGguf(const GgufFile& g) {
  const std::string& source = g.path();
  ModelConfig c;
  auto arch = g.getString("general.architecture");
  if (!arch.ok()) return arch.status();
  c.architecture = std::string(*arch);
  if (c.architecture != "llama" && c.architecture != "qwen2" && c.architecture != "qwen3" &&
      c.architecture != "qwen3moe") {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": unsupported GGUF architecture \"", c.architecture,
                     "\" (supported: llama (with or without experts), qwen2, qwen3, qwen3moe)"));
  }
  const std::string p = c.architecture + ".";
  auto required = [&](const std::string& key, int* out) -> absl::Status {
    ASSIGN_OR_RETURN(int64_t v, g.getInt(key));
    if (v <= 0 || v > INT32_MAX) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": ", key, " = ", v, " is out of range"));
    }
    *out = static_cast<int>(v);
    return absl::OkStatus();
  };
  auto optionalInt = [&](const std::string& key, int* out) -> absl::Status {
    if (g.find(key) == nullptr) return absl::OkStatus();
    return required(key, out);
  };
  auto optionalFloat = [&](const std::string& key, float* out) -> absl::Status {
    if (g.find(key) == nullptr) return absl::OkStatus();
    ASSIGN_OR_RETURN(double v, g.getFloat(key));
    *out = static_cast<float>(v);
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(required(p + "embedding_length", &c.hidden_size));
  RETURN_IF_ERROR(required(p + "feed_forward_length", &c.intermediate_size));
  RETURN_IF_ERROR(required(p + "block_count", &c.num_layers));
  RETURN_IF_ERROR(required(p + "attention.head_count", &c.num_heads));
  c.num_kv_heads = c.num_heads;
  RETURN_IF_ERROR(optionalInt(p + "attention.head_count_kv", &c.num_kv_heads));
  c.head_dim = c.hidden_size / c.num_heads;
  RETURN_IF_ERROR(optionalInt(p + "attention.key_length", &c.head_dim));
  c.max_position_embeddings = 2048;
  RETURN_IF_ERROR(optionalInt(p + "context_length", &c.max_position_embeddings));
  RETURN_IF_ERROR(optionalFloat(p + "attention.layer_norm_rms_epsilon", &c.rms_norm_eps));
  RETURN_IF_ERROR(optionalFloat(p + "rope.freq_base", &c.rope_theta));
  int rope_dims = c.head_dim;
  RETURN_IF_ERROR(optionalInt(p + "rope.dimension_count", &rope_dims));
  if (rope_dims != c.head_dim) {
    return absl::UnimplementedError(absl::StrCat(source, ": partial rotary embedding (",
                                                 rope_dims, " of ", c.head_dim, " dims)"));
  }
  if (const GgufTensorInfo* t = g.findTensor("rope_freqs.weight"); t != nullptr) {
    RETURN_IF_ERROR(readRopeFreqs(*t, c.head_dim, source, &c));
  }
  RETURN_IF_ERROR(readGgufExperts(g, p, source, &c));
  // vocab: the embedding rows, else the declared size, else the token list.
  if (const GgufTensorInfo* emb = g.findTensor("token_embd.weight");
      emb != nullptr && emb->shape.size() == 2) {
    c.vocab_size = static_cast<int>(emb->shape[0]);
  } else if (g.find(p + "vocab_size") != nullptr) {
    RETURN_IF_ERROR(required(p + "vocab_size", &c.vocab_size));
  } else if (const GgufValue* tokens = g.find("tokenizer.ggml.tokens"); tokens != nullptr) {
    c.vocab_size = static_cast<int>(tokens->array.size());
  }
  // llama.cpp uses NEOX (rotate-half) rope for qwen; its llama converter
  // un-permutes q/k back to Meta's interleaved layout.
  c.rope_style = c.architecture == "llama" ? RopeStyle::kInterleaved : RopeStyle::kHalf;
  c.tie_word_embeddings = g.findTensor("output.weight") == nullptr;
  c.attention_bias = g.findTensor("blk.0.attn_q.bias") != nullptr;
  c.qk_norm = c.architecture == "qwen3" || c.architecture == "qwen3moe";
  // llama.cpp's Mixtral is its llama architecture with experts
  if (c.architecture == "llama" && c.isMoe()) c.architecture = "mixtral";
  if (auto bos = g.getInt("tokenizer.ggml.bos_token_id"); bos.ok() && *bos <= INT32_MAX) {
    c.bos_token_id = static_cast<int>(*bos);
  }
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id"}) {
    auto id = g.getInt(key);
    if (!id.ok() || *id > INT32_MAX) continue;
    int v = static_cast<int>(*id);
    if (std::find(c.eos_token_ids.begin(), c.eos_token_ids.end(), v) == c.eos_token_ids.end()) {
      c.eos_token_ids.push_back(v);
    }
  }
  RETURN_IF_ERROR(validateAs(c, source));
  return c;
}

absl::Status ModelConfig::validate() const {
  auto bad = [](auto&&... parts) { return absl::InvalidArgumentError(absl::StrCat(parts...)); };
  if (!knownArchitecture(architecture)) {
    return bad("unsupported architecture \"", architecture, "\" (supported: ", kSupported, ")");
  }
  struct Field { const char* name; int value; };
  for (Field f : {Field{"hidden_size", hidden_size}, Field{"intermediate_size", intermediate_size},
                  Field{"num_hidden_layers", num_layers}, Field{"num_attention_heads", num_heads},
                  Field{"num_key_value_heads", num_kv_heads}, Field{"head_dim", head_dim},
                  Field{"vocab_size", vocab_size},
                  Field{"max_position_embeddings", max_position_embeddings}}) {
    if (f.value <= 0) return bad(f.name, " must be positive, got ", f.value);
  }
  if (isMoe() || architecture == "qwen3moe" || architecture == "mixtral") {
    if (num_experts <= 0 || num_experts > 4096) {
      return bad("num_experts must be in [1, 4096], got ", num_experts);
    }
    if (num_experts_used <= 0 || num_experts_used > num_experts) {
      return bad("num_experts_per_tok must be in [1, num_experts = ", num_experts, "], got ",
                 num_experts_used);
    }
    if (moe_intermediate_size <= 0) {
      return bad("moe_intermediate_size must be positive, got ", moe_intermediate_size);
    }
  }
  if (num_heads % num_kv_heads != 0) {
    return bad("num_attention_heads (", num_heads, ") is not a multiple of num_key_value_heads (",
               num_kv_heads, ")");
  }
  if (head_dim % 2 != 0) return bad("head_dim must be even for rope, got ", head_dim);
  if (!(rms_norm_eps > 0.0f)) return bad("rms_norm_eps must be positive");
  if (!(rope_theta > 0.0f)) return bad("rope_theta must be positive");
  if (rope_scaling == RopeScaling::kLlama3 &&
      (!(rope_factor >= 1.0f) || !(rope_high_freq_factor > rope_low_freq_factor) ||
       rope_original_max_position <= 0)) {
    return bad("llama3 rope_scaling needs factor >= 1, high_freq_factor > low_freq_factor "
               "and original_max_position_embeddings > 0");
  }
  if (rope_scaling != RopeScaling::kNone || !rope_freq_factors.empty()) {
    if (rope_freq_factors.size() != static_cast<size_t>(head_dim / 2)) {
      return bad("rope scaling needs ", head_dim / 2, " frequency factors, got ",
                 rope_freq_factors.size());
    }
    for (float f : rope_freq_factors) {
      if (!(f > 0.0f) || !std::isfinite(f)) return bad("a rope frequency factor is not positive");
    }
  }
  if (bos_token_id >= vocab_size) return bad("bos_token_id ", bos_token_id, " >= vocab_size");
  for (int id : eos_token_ids) {
    if (id < 0 || id >= vocab_size) return bad("eos_token_id ", id, " outside the vocabulary");
  }
  return absl::OkStatus();
}

std::vector<float> ModelConfig::llama3RopeFreqFactors() const {
  const int half = head_dim / 2;
  const double old_len = rope_original_max_position;
  const double low_wavelen = old_len / rope_low_freq_factor;
  const double high_wavelen = old_len / rope_high_freq_factor;
  std::vector<float> factors(half);
  for (int i = 0; i < half; ++i) {
    // the inverse frequency rounded to f32 first, as the kernels and the
    // converter (torch f32) hold it
    const float inv = static_cast<float>(1.0 / std::pow(static_cast<double>(rope_theta), 2.0 * i / head_dim));
    const double wavelen = 2.0 * M_PI / inv;
    double factor;
    if (wavelen < high_wavelen) {
      factor = 1.0;
    } else if (wavelen > low_wavelen) {
      factor = rope_factor;
    } else {
      const double smooth = (old_len / wavelen - rope_low_freq_factor) /
                            (rope_high_freq_factor - rope_low_freq_factor);
      factor = 1.0 / ((1.0 - smooth) / rope_factor + smooth);
    }
    factors[i] = static_cast<float>(factor);
  }
  return factors;
}

int64_t ModelConfig::parameterCount() const {
  const int64_t h = hidden_size, q = int64_t{num_heads} * head_dim,
                kv = int64_t{num_kv_heads} * head_dim;
  int64_t layer = h * q + 2 * h * kv + q * h   // q, k, v, o
                  + 2 * h;                     // the two norms
  if (isMoe()) {
    layer += int64_t{num_experts} * h                                 // router
             + int64_t{num_experts} * 3 * h * moe_intermediate_size;  // experts
  } else {
    layer += 3 * h * intermediate_size;  // gate, up, down
  }
  if (attention_bias) layer += q + 2 * kv;
  if (qk_norm) layer += 2 * int64_t{head_dim};
  int64_t total = int64_t{vocab_size} * h + num_layers * layer + h;
  if (!tie_word_embeddings) total += int64_t{vocab_size} * h;
  return total;
}

int64_t ModelConfig::activeParameterCount() const {
  const int64_t h = hidden_size;
  int64_t total = parameterCount() - int64_t{vocab_size} * h + h;  // one embedding row
  if (tie_word_embeddings) total += int64_t{vocab_size} * h;       // the lm head reads them all
  if (isMoe()) {
    total -= int64_t{num_layers} * (num_experts - num_experts_used) * 3 * h * moe_intermediate_size;
  }
  return total;
}

}  // namespace tandem::model
