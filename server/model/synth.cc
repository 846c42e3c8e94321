#include "server/model/synth.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/mapped_file.h"
#include "common/quant_blocks.h"
#include "common/status.h"
#include "formats/gguf_writer.h"
#include "formats/hf_tokenizer_from_gguf.h"
#include "formats/safetensors_writer.h"
#include "nlohmann/json.hpp"
#include "server/model/synth_vocab.h"
#include "server/model/tensor_layout.h"

namespace tandem::model {

namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;
// uniform on [-a, a) has standard deviation a / sqrt(3); 0.02 keeps
// activations of any width sane behind the RMSNorms.
const float kUniformScale = 0.02f * std::sqrt(3.0f);

uint64_t splitmix64(uint64_t x) {
  x += kGolden;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t tensorKey(uint64_t seed, const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ull;  // fnv-1a
  for (unsigned char ch : name) h = (h ^ ch) * 0x100000001b3ull;
  return splitmix64(seed) ^ h;
}

// element `i` (row-major, HF layout) of tensor `e`.
float valueAt(const ExpectedTensor& e, uint64_t key, uint64_t i) {
  if (e.is_norm) return 1.0f;
  if (e.is_bias) return 0.0f;
  uint64_t u = splitmix64(key + i * kGolden);
  float unit = static_cast<float>(u >> 40) * (1.0f / 8388608.0f) - 1.0f;  // [-1, 1)
  return unit * kUniformScale;
}

const char* hfClass(const std::string& arch) {
  if (arch == "mistral") return "MistralForCausalLM";
  if (arch == "qwen2") return "Qwen2ForCausalLM";
  if (arch == "qwen3") return "Qwen3ForCausalLM";
  if (arch == "qwen3moe") return "Qwen3MoeForCausalLM";
  if (arch == "mixtral") return "MixtralForCausalLM";
  return "LlamaForCausalLM";
}

const char* torchDtype(DType t) {
  return t == DType::kF16 ? "float16" : t == DType::kBF16 ? "bfloat16" : "float32";
}

absl::StatusOr<ModelConfig> synthConfig(const SynthShape& s, const SynthVocab& vocab) {
  ModelConfig c;
  c.architecture = s.arch;
  c.hidden_size = s.dim;
  c.intermediate_size = s.ffn;
  c.num_layers = s.layers;
  c.num_heads = s.heads;
  c.num_kv_heads = s.kv_heads > 0 ? s.kv_heads : s.heads;
  c.head_dim = s.head_dim > 0 ? s.head_dim : (s.heads > 0 ? s.dim / s.heads : 0);
  c.max_position_embeddings = s.max_pos;
  c.rms_norm_eps = 1e-5f;
  c.rope_theta = 10000.0f;
  c.attention_bias = s.arch == "qwen2";
  c.qk_norm = s.arch == "qwen3" || s.arch == "qwen3moe";
  c.tie_word_embeddings = false;
  const bool moe_arch = s.arch == "qwen3moe" || s.arch == "mixtral";
  if (moe_arch != (s.experts > 0)) {
    return absl::InvalidArgumentError(
        "experts=N goes with arch=qwen3moe or arch=mixtral, and those need experts=N");
  }
  if (s.experts > 0) {
    c.num_experts = s.experts;
    c.num_experts_used = s.experts_used > 0 ? s.experts_used : std::min(2, s.experts);
    c.moe_intermediate_size = s.expert_ffn > 0 ? s.expert_ffn : s.ffn;
    c.norm_topk_prob = true;
    // Mixtral's experts are its intermediate_size
    if (s.arch == "mixtral") c.intermediate_size = c.moe_intermediate_size;
  }
  c.vocab_size = s.vocab;
  if (s.rope_scaling == "llama3") {
    if (s.arch != "llama" && s.arch != "mistral") {
      return absl::InvalidArgumentError("rope_scaling=llama3 needs arch=llama or arch=mistral");
    }
    c.rope_scaling = RopeScaling::kLlama3;
    c.rope_factor = 8.0f;
    c.rope_low_freq_factor = 1.0f;
    c.rope_high_freq_factor = 4.0f;
    c.rope_original_max_position = 8192;
    c.rope_freq_factors = c.llama3RopeFreqFactors();
  }
  if (vocab.size > 0) {
    if (s.vocab == 0) c.vocab_size = vocab.size;
    if (c.vocab_size < vocab.size) {
      return absl::InvalidArgumentError(absl::StrCat("vocab=", s.vocab, " is smaller than the ",
                                                     vocab.size, " tokens of ", vocab.source));
    }
    c.bos_token_id = vocab.bos;
    c.eos_token_ids = vocab.eos;
  } else if (s.vocab == 0) {
    return absl::InvalidArgumentError("the shape needs vocab=N when there is no --vocab-from");
  } else if (c.vocab_size > 2) {
    c.bos_token_id = 1;
    c.eos_token_ids = {2};
  }
  if (s.dim > 0 && s.heads > 0 && s.head_dim == 0 && s.dim % s.heads != 0) {
    return absl::InvalidArgumentError("dim must be a multiple of heads (or give head_dim)");
  }
  RETURN_IF_ERROR(c.validate());
  return c;
}

absl::Status writeHf(const SynthOptions& o, const ModelConfig& c, const SynthVocab& vocab) {
  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (ec) return absl::InternalError(absl::StrCat(o.out, ": ", ec.message()));
  ordered_json cfg = {
      {"architectures", {hfClass(c.architecture)}},
      {"model_type", c.architecture},
      {"hidden_size", c.hidden_size},
      {"intermediate_size", c.intermediate_size},
      {"num_hidden_layers", c.num_layers},
      {"num_attention_heads", c.num_heads},
      {"num_key_value_heads", c.num_kv_heads},
      {"head_dim", c.head_dim},
      {"vocab_size", c.vocab_size},
      {"max_position_embeddings", c.max_position_embeddings},
      {"rms_norm_eps", c.rms_norm_eps},
      {"rope_theta", c.rope_theta},
      {"hidden_act", "silu"},
      {"attention_bias", c.attention_bias},
      {"tie_word_embeddings", c.tie_word_embeddings},
      {"torch_dtype", torchDtype(o.dtype)},
  };
  if (c.architecture == "qwen3moe") {
    cfg["model_type"] = "qwen3_moe";
    cfg["num_experts"] = c.num_experts;
    cfg["num_experts_per_tok"] = c.num_experts_used;
    cfg["moe_intermediate_size"] = c.moe_intermediate_size;
    cfg["norm_topk_prob"] = c.norm_topk_prob;
    cfg["decoder_sparse_step"] = 1;
    cfg["mlp_only_layers"] = ordered_json::array();
  } else if (c.architecture == "mixtral") {
    cfg["num_local_experts"] = c.num_experts;
    cfg["num_experts_per_tok"] = c.num_experts_used;
  }
  if (c.rope_scaling == RopeScaling::kLlama3) {
    cfg["rope_scaling"] = {{"rope_type", "llama3"},
                           {"factor", c.rope_factor},
                           {"low_freq_factor", c.rope_low_freq_factor},
                           {"high_freq_factor", c.rope_high_freq_factor},
                           {"original_max_position_embeddings", c.rope_original_max_position}};
  }
  ordered_json gen = {{"do_sample", false}};
  if (c.bos_token_id >= 0) cfg["bos_token_id"] = gen["bos_token_id"] = c.bos_token_id;
  if (!c.eos_token_ids.empty()) {
    ordered_json eos = c.eos_token_ids.size() == 1 ? ordered_json(c.eos_token_ids[0])
                                                   : ordered_json(c.eos_token_ids);
    cfg["eos_token_id"] = gen["eos_token_id"] = eos;
  }
  RETURN_IF_ERROR(writeFile((fs::path(o.out) / "config.json").string(), cfg.dump(2) + "\n"));
  RETURN_IF_ERROR(
      writeFile((fs::path(o.out) / "generation_config.json").string(), gen.dump(2) + "\n"));
  if (vocab.kind == SynthVocab::Kind::kHfDir) {
    for (const char* name : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"}) {
      fs::path from = fs::path(vocab.source) / name;
      if (!fs::exists(from)) continue;
      ASSIGN_OR_RETURN(std::string text, readFile(from.string()));
      RETURN_IF_ERROR(writeFile((fs::path(o.out) / name).string(), text));
    }
  } else if (vocab.kind == SynthVocab::Kind::kGguf) {
    RETURN_IF_ERROR(writeHfTokenizerFromGguf(*vocab.gguf, o.out));
  }
  std::vector<ExpectedTensor> tensors = expectedTensors(c);
  std::vector<uint64_t> keys;
  SafetensorsWriter writer;
  writer.setMetadata("format", "pt");
  for (const ExpectedTensor& e : tensors) {
    // Mixtral's files name its experts its own way; the values are keyed by
    // the canonical names either way
    writer.addTensor(c.architecture == "mixtral" ? mixtralFromCanonical(e.name) : e.name, o.dtype, e.shape);
    keys.push_back(tensorKey(o.seed, e.name));
  }
  return writer.write((fs::path(o.out) / "model.safetensors").string(),
                      [&](size_t t, uint64_t first, size_t count, float* out) {
                        for (size_t i = 0; i < count; ++i) {
                          out[i] = valueAt(tensors[t], keys[t], first + i);
                        }
                      });
}

// llama_ftype numbers: ALL_F32 0, MOSTLY_F16 1, Q4_0 2, Q8_0 7, Q4_K_M 15,
// BF16 32 (a q4_k or q6_k for everything has no ftype of its own: Q4_K_M's).
uint32_t ggufFileType(const SynthOptions& o) {
  if (o.q4_k_m) return 15;
  switch (o.dtype) {
    case DType::kF16: return 1;
    case DType::kBF16: return 32;
    case DType::kQ4_0: return 2;
    case DType::kQ8_0: return 7;
    case DType::kQ4_K: case DType::kQ6_K: return 15;
    default: return 0;
  }
}

// llama.cpp's use_more_bits(i, n) of llama_tensor_get_type.
bool useMoreBits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

// the GGUF dtype of the HF tensor `e` under the options.
DType ggufTensorDType(const SynthOptions& o, const ModelConfig& c, const ExpectedTensor& e) {
  if (e.shape.size() == 1) return DType::kF32;  // norms, as llama.cpp's converter
  if (!o.q4_k_m) return o.dtype;
  if (e.shape.back() % quant::kQK_K != 0) return DType::kQ8_0;
  if (e.name == "lm_head.weight") return DType::kQ6_K;
  const bool v = e.name.ends_with("self_attn.v_proj.weight");
  const bool down = e.name.ends_with("down_proj.weight");  // experts' too (ffn_down_exps)
  if (v || down) {
    const int layer = std::atoi(e.name.c_str() + std::string_view("model.layers.").size());
    if (useMoreBits(layer, c.num_layers)) return DType::kQ6_K;
  }
  return DType::kQ4_K;
}

// a tensor of the GGUF file: one of expectedTensors(), or a layer's
// experts of one projection stacked (`experts` consecutive tensors from
// `first`).
struct GgufTensorPlan {
  size_t first = 0;
  int experts = 0;  // 0: a plain tensor
};

// the router's values as the HF file of the same options holds them
// (rounded through its 16-bit type), written as F32.
float throughDtype(float v, DType t) {
  if (t == DType::kF16) return f16ToF32(f32ToF16(v));
  if (t == DType::kBF16) return bf16ToF32(f32ToBf16(v));
  return v;
}

absl::Status writeGguf(const SynthOptions& o, const ModelConfig& c, const SynthVocab& vocab) {
  // llama.cpp has no "mistral" GGUF architecture: mistral is llama there,
  // and so is mixtral (llama with llama.expert_count).
  const std::string arch =
      c.architecture == "mistral" || c.architecture == "mixtral" ? "llama" : c.architecture;
  const std::string p = arch + ".";
  GgufWriter w;
  w.setString("general.architecture", arch);
  w.setString("general.name", absl::StrCat("tandem-synth-", c.architecture));
  w.setU32("general.alignment", 32);
  w.setU32(p + "block_count", c.num_layers);
  w.setU32(p + "context_length", c.max_position_embeddings);
  w.setU32(p + "embedding_length", c.hidden_size);
  w.setU32(p + "feed_forward_length", c.intermediate_size);
  w.setU32(p + "attention.head_count", c.num_heads);
  w.setU32(p + "attention.head_count_kv", c.num_kv_heads);
  w.setF32(p + "rope.freq_base", c.rope_theta);
  w.setF32(p + "attention.layer_norm_rms_epsilon", c.rms_norm_eps);
  w.setU32(p + "attention.key_length", c.head_dim);
  w.setU32(p + "attention.value_length", c.head_dim);
  w.setU32(p + "rope.dimension_count", c.head_dim);
  w.setU32(p + "vocab_size", c.vocab_size);
  if (c.isMoe()) {
    w.setU32(p + "expert_count", c.num_experts);
    w.setU32(p + "expert_used_count", c.num_experts_used);
    if (arch == "qwen3moe") w.setU32(p + "expert_feed_forward_length", c.moe_intermediate_size);
  }
  w.setU32("general.file_type", ggufFileType(o));
  RETURN_IF_ERROR(addGgufVocab(vocab, c, &w));
  // llama3 scaling is the rope_freqs tensor, first as llama.cpp writes it.
  const size_t extra = c.rope_freq_factors.empty() ? 0 : 1;
  if (extra > 0) {
    w.addTensor("rope_freqs.weight", DType::kF32, {static_cast<int64_t>(c.rope_freq_factors.size())});
  }
  std::vector<ExpectedTensor> tensors = expectedTensors(c);
  std::vector<uint64_t> keys;
  for (const ExpectedTensor& e : tensors) keys.push_back(tensorKey(o.seed, e.name));
  // a layer's experts go out as llama.cpp's stacked tensors, gate, up, down
  std::vector<GgufTensorPlan> plan;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const ExpectedTensor& e = tensors[i];
    if (e.name.find(".mlp.experts.") != std::string::npos) {
      if (e.name.find(".mlp.experts.0.") == std::string::npos) continue;
      // expert 0's gate, up, down: each stacked with its kind of the others
      plan.push_back({i, c.num_experts});
      continue;
    }
    plan.push_back({i, 0});
  }
  for (const GgufTensorPlan& t : plan) {
    const ExpectedTensor& e = tensors[t.first];
    DType dtype = ggufTensorDType(o, c, e);
    std::vector<int64_t> shape = e.shape;
    std::string name = ggufNameFromHf(e.name);
    if (t.experts > 0) {
      shape.insert(shape.begin(), t.experts);
    } else if (e.name.ends_with("mlp.gate.weight")) {
      dtype = DType::kF32;  // the router, as llama.cpp keeps ffn_gate_inp
    }
    if (quant::isQuantized(dtype) && e.shape.back() % quant::blockValues(dtype) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "synth: ", e.name, " has rows of ", e.shape.back(), " values, not a multiple of ",
          std::string(dtypeName(dtype)), "'s block of ", quant::blockValues(dtype)));
    }
    w.addTensor(name, dtype, shape);
  }
  // llama.cpp's llama layout keeps q/k rows in Meta's interleaved rope order:
  // per head, gguf row 2i is hf row i and gguf row 2i+1 is hf row hd/2 + i.
  const bool permute = arch == "llama";
  const uint64_t hd = c.head_dim, cols = c.hidden_size;
  auto isQk = [](const std::string& n) {
    return n.ends_with("q_proj.weight") || n.ends_with("k_proj.weight");
  };
  fs::path parent = fs::path(o.out).parent_path();
  std::error_code ec;
  if (!parent.empty()) fs::create_directories(parent, ec);
  return w.write(o.out, [&](size_t t, uint64_t first, size_t count, float* out) {
    if (t < extra) {
      std::copy_n(c.rope_freq_factors.begin() + first, count, out);
      return;
    }
    t -= extra;
    const GgufTensorPlan& pt = plan[t];
    if (pt.experts > 0) {
      // expert k's slice of the stacked tensor is its own tensor (3 apart)
      const ExpectedTensor& e0 = tensors[pt.first];
      const uint64_t slice = static_cast<uint64_t>(e0.shape[0] * e0.shape[1]);
      for (size_t i = 0; i < count; ++i) {
        const uint64_t idx = first + i, expert = idx / slice;
        const size_t k = pt.first + 3 * expert;
        out[i] = valueAt(tensors[k], keys[k], idx % slice);
      }
      return;
    }
    const ExpectedTensor& e = tensors[pt.first];
    const uint64_t key = keys[pt.first];
    const bool router = e.name.ends_with("mlp.gate.weight");
    const bool qk = permute && isQk(e.name);
    for (size_t i = 0; i < count; ++i) {
      uint64_t idx = first + i;
      if (qk) {
        uint64_t row = idx / cols, col = idx % cols, head = row / hd, r = row % hd;
        uint64_t hf_row = head * hd + (r % 2 == 0 ? r / 2 : hd / 2 + r / 2);
        idx = hf_row * cols + col;
      }
      out[i] = router ? throughDtype(valueAt(e, key, idx), o.dtype) : valueAt(e, key, idx);
    }
  });
}

}  // namespace

absl::StatusOr<SynthShape> parseShape(const std::string& spec) {
  SynthShape s;
  bool seen_kv = false;
  for (absl::string_view part : absl::StrSplit(spec, ',', absl::SkipEmpty())) {
    std::vector<absl::string_view> kv = absl::StrSplit(part, absl::MaxSplits('=', 1));
    if (kv.size() != 2) {
      return absl::InvalidArgumentError(absl::StrCat("shape: expected key=value, got '", part, "'"));
    }
    if (kv[0] == "rope_scaling") {
      if (kv[1] != "llama3" && kv[1] != "none") {
        return absl::InvalidArgumentError(
            absl::StrCat("shape: unsupported rope_scaling '", kv[1], "' (llama3, none)"));
      }
      s.rope_scaling = kv[1] == "none" ? "" : std::string(kv[1]);
      continue;
    }
    if (kv[0] == "arch") {
      s.arch = std::string(kv[1]);
      if (s.arch != "llama" && s.arch != "mistral" && s.arch != "qwen2" && s.arch != "qwen3" &&
          s.arch != "qwen3moe" && s.arch != "mixtral") {
        return absl::InvalidArgumentError(absl::StrCat(
            "shape: unsupported arch '", kv[1], "' (llama, mistral, qwen2, qwen3, qwen3moe, mixtral)"));
      }
      continue;
    }
    int v = 0;
    if (!absl::SimpleAtoi(kv[1], &v) || v <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape: ", kv[0], " must be a positive integer, got '", kv[1], "'"));
    }
    if (kv[0] == "dim") s.dim = v;
    else if (kv[0] == "layers") s.layers = v;
    else if (kv[0] == "heads") s.heads = v;
    else if (kv[0] == "kv_heads") { s.kv_heads = v; seen_kv = true; }
    else if (kv[0] == "ffn") s.ffn = v;
    else if (kv[0] == "vocab") s.vocab = v;
    else if (kv[0] == "head_dim") s.head_dim = v;
    else if (kv[0] == "max_pos") s.max_pos = v;
    else if (kv[0] == "experts") s.experts = v;
    else if (kv[0] == "experts_used") s.experts_used = v;
    else if (kv[0] == "expert_ffn") s.expert_ffn = v;
    else return absl::InvalidArgumentError(absl::StrCat("shape: unknown key '", kv[0], "'"));
  }
  for (auto [name, v] : {std::pair{"dim", s.dim}, {"layers", s.layers}, {"heads", s.heads},
                         {"ffn", s.ffn}}) {
    if (v == 0) return absl::InvalidArgumentError(absl::StrCat("shape: missing ", name, "="));
  }
  if (!seen_kv) s.kv_heads = s.heads;
  return s;
}

absl::Status writeSynthModel(const SynthOptions& o) {
  if (o.out.empty()) return absl::InvalidArgumentError("synth: no output path");
  const bool quantized = o.q4_k_m || quant::isQuantized(o.dtype);
  if (o.dtype != DType::kF32 && o.dtype != DType::kF16 && o.dtype != DType::kBF16 &&
      !quant::isQuantized(o.dtype)) {
    return absl::InvalidArgumentError("synth: dtype must be f32, f16, bf16, q8_0, q4_0, q4_k or q6_k");
  }
  if (quantized && o.format != SynthOptions::Format::kGguf) {
    return absl::InvalidArgumentError("synth: quantized dtypes are GGUF only (--format gguf)");
  }
  ASSIGN_OR_RETURN(SynthVocab vocab, loadSynthVocab(o.vocab_from));
  ASSIGN_OR_RETURN(ModelConfig c, synthConfig(o.shape, vocab));
  if (o.format == SynthOptions::Format::kHf) return writeHf(o, c, vocab);
  return writeGguf(o, c, vocab);
}

}  // namespace tandem::model
