// describeModel(): the text `tandem model inspect` prints.
#include <filesystem>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/mapped_file.h"
#include "nlohmann/json.hpp"
#include "server/model/weights.h"

namespace tandem::model {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

absl::string_view av(std::string_view s) { return absl::string_view(s.data(), s.size()); }

json readJson(const fs::path& path) {
  auto text = readFile(path.string());
  if (!text.ok()) return json();
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? json() : j;
}

void describeConfig(const ModelConfig& c, std::string* out) {
  absl::StrAppend(out, "architecture: ", c.architecture, "\n");
  absl::StrAppend(out, "hidden_size: ", c.hidden_size, "\n");
  absl::StrAppend(out, "intermediate_size: ", c.intermediate_size, "\n");
  absl::StrAppend(out, "num_hidden_layers: ", c.num_layers, "\n");
  absl::StrAppend(out, "num_attention_heads: ", c.num_heads, "\n");
  absl::StrAppend(out, "num_key_value_heads: ", c.num_kv_heads, "\n");
  absl::StrAppend(out, "head_dim: ", c.head_dim, "\n");
  absl::StrAppend(out, "vocab_size: ", c.vocab_size, "\n");
  absl::StrAppend(out, "max_position_embeddings: ", c.max_position_embeddings, "\n");
  absl::StrAppend(out, "rms_norm_eps: ", absl::StrFormat("%g", c.rms_norm_eps), "\n");
  absl::StrAppend(out, "rope_theta: ", absl::StrFormat("%g", c.rope_theta), "\n");
  absl::StrAppend(out, "rope_style: ",
                  c.rope_style == RopeStyle::kHalf ? "half (neox)" : "interleaved (gptj)", "\n");
  if (c.rope_scaling == RopeScaling::kLlama3) {
    absl::StrAppend(out, absl::StrFormat(
        "rope_scaling: llama3 (factor %g, low_freq_factor %g, high_freq_factor %g, "
        "original_max_position_embeddings %d)\n",
        c.rope_factor, c.rope_low_freq_factor, c.rope_high_freq_factor,
        c.rope_original_max_position));
  } else if (c.rope_scaling == RopeScaling::kFreqFactors) {
    absl::StrAppend(out, "rope_scaling: per-pair frequency factors from rope_freqs.weight [",
                    absl::StrJoin(c.rope_freq_factors, ", "), "]\n");
  } else {
    absl::StrAppend(out, "rope_scaling: none\n");
  }
  absl::StrAppend(out, "tie_word_embeddings: ", c.tie_word_embeddings ? "true" : "false", "\n");
  absl::StrAppend(out, "attention_bias: ", c.attention_bias ? "true" : "false", "\n");
  absl::StrAppend(out, "qk_norm: ", c.qk_norm ? "true" : "false", "\n");
  if (c.isMoe()) {
    absl::StrAppend(out, "num_experts: ", c.num_experts, " (", c.num_experts_used, " a token, ",
                    c.norm_topk_prob ? "renormalized" : "not renormalized", ")\n");
    absl::StrAppend(out, "moe_intermediate_size: ", c.moe_intermediate_size, "\n");
    absl::StrAppend(out, "active_parameters: ", c.activeParameterCount(), " a token\n");
  }
  absl::StrAppend(out, "bos_token_id: ", c.bos_token_id, "\n");
  absl::StrAppend(out, "eos_token_ids: [", absl::StrJoin(c.eos_token_ids, ", "), "]\n");
}

void describeHfTokenizer(const std::string& dir, std::string* out) {
  fs::path tj = fs::path(dir) / "tokenizer.json";
  if (fs::exists(tj)) {
    json j = readJson(tj);
    std::string type = "unknown";
    if (j.is_object() && j.contains("model") && j["model"].is_object() &&
        j["model"].contains("type") && j["model"]["type"].is_string()) {
      type = j["model"]["type"].get<std::string>();
    }
    size_t vocab = 0;
    if (j.is_object() && j.contains("model") && j["model"].is_object() &&
        j["model"].contains("vocab") && j["model"]["vocab"].is_object()) {
      vocab = j["model"]["vocab"].size();
    }
    absl::StrAppend(out, "tokenizer.json: present (model ", type, ", ", vocab, " base tokens)\n");
  } else {
    absl::StrAppend(out, "tokenizer.json: absent\n");
  }
  json tc = readJson(fs::path(dir) / "tokenizer_config.json");
  bool chat = tc.is_object() && tc.contains("chat_template") && !tc["chat_template"].is_null();
  if (!chat) chat = fs::exists(fs::path(dir) / "chat_template.jinja");
  absl::StrAppend(out, "chat_template: ", chat ? "present" : "absent", "\n");
}

void describeGgufTokenizer(const GgufFile& g, std::string* out) {
  auto model = g.getString("tokenizer.ggml.model");
  const GgufValue* tokens = g.find("tokenizer.ggml.tokens");
  absl::StrAppend(out, "tokenizer.ggml.model: ", model.ok() ? av(*model) : "absent",
                  ", vocab ", tokens == nullptr ? 0 : tokens->array.size(), "\n");
  if (auto pre = g.getString("tokenizer.ggml.pre"); pre.ok()) {
    absl::StrAppend(out, "tokenizer.ggml.pre: ", av(*pre), "\n");
  }
  absl::StrAppend(out, "chat_template: ",
                  g.find("tokenizer.chat_template") != nullptr ? "present" : "absent", "\n");
}

}  // namespace

std::string describeModel(const ModelWeights& w) {
  std::string out;
  absl::StrAppend(&out, "path: ", w.path(), "\n");
  absl::StrAppend(&out, "format: ", w.format() == ModelFormat::kGguf ? "gguf" : "hf", "\n");
  if (w.gguf() != nullptr) absl::StrAppend(&out, "gguf_version: ", w.gguf()->version(), "\n");
  describeConfig(w.config(), &out);
  std::map<std::string, int> per_dtype;
  for (const auto& [name, t] : w.tensors()) ++per_dtype[std::string(dtypeName(t.dtype))];
  absl::StrAppend(&out, "tensors: ", w.tensors().size(), " (");
  bool first = true;
  for (const auto& [dtype, n] : per_dtype) {
    absl::StrAppend(&out, first ? "" : ", ", dtype, ": ", n);
    first = false;
  }
  absl::StrAppend(&out, ")\n");
  int64_t stored = 0;
  for (const auto& [name, t] : w.tensors()) stored += t.numel();
  absl::StrAppend(&out, "parameters: ", w.config().parameterCount(), " (", stored,
                  " stored)\n");
  absl::StrAppend(&out, "total_bytes: ", w.totalBytes(), "\n");
  if (w.format() == ModelFormat::kGguf) {
    describeGgufTokenizer(*w.gguf(), &out);
  } else {
    describeHfTokenizer(w.path(), &out);
  }
  return out;
}

}  // namespace tandem::model
