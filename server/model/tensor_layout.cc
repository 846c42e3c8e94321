#include "server/model/tensor_layout.h"

#include <charconv>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tandem::model {

namespace {

// per-layer suffixes: HF (after "model.layers.N.") and GGUF (after "blk.N.").
struct LayerName {
  const char* hf;
  const char* gguf;
};
constexpr LayerName kLayerNames[] = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"self_attn.q_proj.bias", "attn_q.bias"},
    {"self_attn.k_proj.bias", "attn_k.bias"},
    {"self_attn.v_proj.bias", "attn_v.bias"},
    {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"},
    {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
    {"mlp.gate.weight", "ffn_gate_inp.weight"},
};
struct GlobalName {
  const char* hf;
  const char* gguf;
};
constexpr GlobalName kGlobalNames[] = {
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
};

// splits "<prefix><N>.<rest>" into N and rest.
bool splitLayer(std::string_view name, std::string_view prefix, int* layer,
                std::string_view* rest) {
  if (name.substr(0, prefix.size()) != prefix) return false;
  name.remove_prefix(prefix.size());
  size_t dot = name.find('.');
  if (dot == std::string_view::npos || dot == 0) return false;
  auto [ptr, ec] = std::from_chars(name.data(), name.data() + dot, *layer);
  if (ec != std::errc() || ptr != name.data() + dot) return false;
  *rest = name.substr(dot + 1);
  return true;
}

}  // namespace

std::vector<ExpectedTensor> expectedTensors(const ModelConfig& c) {
  const int64_t h = c.hidden_size, hd = c.head_dim, q = int64_t{c.num_heads} * hd,
                kv = int64_t{c.num_kv_heads} * hd, ffn = c.intermediate_size, v = c.vocab_size;
  std::vector<ExpectedTensor> out;
  out.push_back({"model.embed_tokens.weight", {v, h}});
  for (int i = 0; i < c.num_layers; ++i) {
    std::string p = absl::StrCat("model.layers.", i, ".");
    out.push_back({p + "input_layernorm.weight", {h}, /*is_norm=*/true});
    out.push_back({p + "self_attn.q_proj.weight", {q, h}});
    out.push_back({p + "self_attn.k_proj.weight", {kv, h}});
    out.push_back({p + "self_attn.v_proj.weight", {kv, h}});
    if (c.attention_bias) {
      out.push_back({p + "self_attn.q_proj.bias", {q}, false, /*is_bias=*/true});
      out.push_back({p + "self_attn.k_proj.bias", {kv}, false, true});
      out.push_back({p + "self_attn.v_proj.bias", {kv}, false, true});
    }
    if (c.qk_norm) {
      out.push_back({p + "self_attn.q_norm.weight", {hd}, true});
      out.push_back({p + "self_attn.k_norm.weight", {hd}, true});
    }
    out.push_back({p + "self_attn.o_proj.weight", {h, q}});
    out.push_back({p + "post_attention_layernorm.weight", {h}, true});
    if (c.isMoe()) {
      const int64_t ef = c.moe_intermediate_size;
      out.push_back({p + "mlp.gate.weight", {c.num_experts, h}});
      for (int e = 0; e < c.num_experts; ++e) {
        out.push_back({expertTensorName(i, e, "gate_proj"), {ef, h}});
        out.push_back({expertTensorName(i, e, "up_proj"), {ef, h}});
        out.push_back({expertTensorName(i, e, "down_proj"), {h, ef}});
      }
      continue;
    }
    out.push_back({p + "mlp.gate_proj.weight", {ffn, h}});
    out.push_back({p + "mlp.up_proj.weight", {ffn, h}});
    out.push_back({p + "mlp.down_proj.weight", {h, ffn}});
  }
  out.push_back({"model.norm.weight", {h}, true});
  if (!c.tie_word_embeddings) out.push_back({"lm_head.weight", {v, h}});
  return out;
}

std::string shapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

std::string hfNameFromGguf(std::string_view name) {
  for (const GlobalName& g : kGlobalNames) {
    if (name == g.gguf) return g.hf;
  }
  int layer = 0;
  std::string_view rest;
  if (!splitLayer(name, "blk.", &layer, &rest)) return "";
  for (const LayerName& l : kLayerNames) {
    if (rest == l.gguf) return absl::StrCat("model.layers.", layer, ".", l.hf);
  }
  return "";
}

std::string expertTensorName(int layer, int expert, std::string_view proj) {
  return absl::StrCat("model.layers.", layer, ".mlp.experts.", expert, ".", std::string(proj), ".weight");
}

namespace {

// "gate_proj" <-> "gate" of ffn_gate_exps
constexpr std::pair<const char*, const char*> kStackedNames[] = {
    {"gate_proj", "ffn_gate_exps.weight"}, {"up_proj", "ffn_up_exps.weight"}, {"down_proj", "ffn_down_exps.weight"}};
// Mixtral's w1 (gate), w3 (up), w2 (down)
constexpr std::pair<const char*, const char*> kMixtralNames[] = {
    {"gate_proj", "w1"}, {"up_proj", "w3"}, {"down_proj", "w2"}};

}  // namespace

bool parseStackedExperts(std::string_view name, int* layer, std::string* proj) {
  std::string_view rest;
  if (!splitLayer(name, "blk.", layer, &rest)) return false;
  for (const auto& [p, g] : kStackedNames) {
    if (rest == g) {
      *proj = p;
      return true;
    }
  }
  return false;
}

std::string stackedExpertsName(int layer, std::string_view proj) {
  for (const auto& [p, g] : kStackedNames) {
    if (proj == p) return absl::StrCat("blk.", layer, ".", g);
  }
  return "";
}

std::string canonicalFromMixtral(std::string_view name) {
  int layer = 0;
  std::string_view rest;
  if (!splitLayer(name, "model.layers.", &layer, &rest)) return std::string(name);
  const std::string_view moe = "block_sparse_moe.";
  if (rest.substr(0, moe.size()) != moe) return std::string(name);
  rest.remove_prefix(moe.size());
  if (rest == "gate.weight") return absl::StrCat("model.layers.", layer, ".mlp.gate.weight");
  int expert = 0;
  std::string_view w;
  if (!splitLayer(rest, "experts.", &expert, &w)) return std::string(name);
  for (const auto& [p, m] : kMixtralNames) {
    if (w == absl::StrCat(m, ".weight")) return expertTensorName(layer, expert, p);
  }
  return std::string(name);
}

std::string mixtralFromCanonical(std::string_view name) {
  int layer = 0;
  std::string_view rest;
  if (!splitLayer(name, "model.layers.", &layer, &rest)) return std::string(name);
  if (rest == "mlp.gate.weight") return absl::StrCat("model.layers.", layer, ".block_sparse_moe.gate.weight");
  int expert = 0;
  std::string_view w;
  if (!splitLayer(rest, "mlp.experts.", &expert, &w)) return std::string(name);
  for (const auto& [p, m] : kMixtralNames) {
    if (w == absl::StrCat(p, ".weight")) {
      return absl::StrCat("model.layers.", layer, ".block_sparse_moe.experts.", expert, ".", m, ".weight");
    }
  }
  return std::string(name);
}

std::string ggufNameFromHf(std::string_view name) {
  for (const GlobalName& g : kGlobalNames) {
    if (name == g.hf) return g.gguf;
  }
  int layer = 0;
  std::string_view rest;
  if (!splitLayer(name, "model.layers.", &layer, &rest)) return "";
  for (const LayerName& l : kLayerNames) {
    if (rest == l.hf) return absl::StrCat("blk.", layer, ".", l.gguf);
  }
  int expert = 0;
  std::string_view w;
  if (splitLayer(rest, "mlp.experts.", &expert, &w) && w.ends_with(".weight")) {
    w.remove_suffix(std::string_view(".weight").size());
    return stackedExpertsName(layer, w);
  }
  return "";
}

}  // namespace tandem::model
