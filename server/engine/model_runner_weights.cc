#include "server/engine/model_runner_weights.h"

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/quant_blocks.h"
#include "common/status.h"
#include "server/model/tensor_layout.h"

namespace tandem::engine {

namespace {

using kernels::Tensor;

class Binder {
 public:
  Binder(const model::ModelWeights& weights, kernels::Backend& backend, ModelTensors* out)
      : weights_(weights), backend_(backend), out_(out) {}

  // the matmul weight `name` as a [rows, cols] backend tensor, quantized
  // weights as they are.
  absl::StatusOr<Tensor> bind(const std::string& name, int64_t rows, int64_t cols) {
    return bindAs(name, rows, cols, /*keep_quantized=*/true);
  }

  // a tensor that is not a matmul weight (embedding table, norm): a
  // quantized one is dequantized to F32 at load, so every backend's
  // embedding and rmsNorm read it.
  absl::StatusOr<Tensor> bindDense(const std::string& name, int64_t rows, int64_t cols) {
    return bindAs(name, rows, cols, /*keep_quantized=*/false);
  }

  absl::StatusOr<Tensor> bindAs(const std::string& name, int64_t rows, int64_t cols,
                                bool keep_quantized) {
    ASSIGN_OR_RETURN(const model::TensorView* t, check(name, rows, cols));
    if (quant::isQuantized(t->dtype) && !keep_quantized) {
      std::vector<float> values(static_cast<size_t>(rows * cols));
      quant::dequantizeRow(t->dtype, t->data, values.data(), rows * cols);
      ASSIGN_OR_RETURN(kernels::BufferPtr buf, backend_.allocate(values.size() * sizeof(float)));
      backend_.upload(buf->data(), values.data(), values.size() * sizeof(float));
      Tensor out = Tensor::of(*buf, DType::kF32, rows, cols);
      out_->buffers.push_back(std::move(buf));
      return out;
    }
    ASSIGN_OR_RETURN(kernels::BufferPtr buf, backend_.importHost(t->data, t->bytes));
    Tensor out = Tensor::of(*buf, t->dtype, rows, cols);
    out_->buffers.push_back(std::move(buf));
    return out;
  }

  // experts 0..E-1 of `proj` in layer `layer` as one [E * rows, cols]
  // tensor of their common dtype.
  absl::StatusOr<Tensor> bindExperts(int layer, int experts, const char* proj, int64_t rows,
                                     int64_t cols) {
    std::vector<const model::TensorView*> views;
    for (int e = 0; e < experts; ++e) {
      ASSIGN_OR_RETURN(const model::TensorView* t,
                       check(model::expertTensorName(layer, e, proj), rows, cols));
      if (!views.empty() && t->dtype != views[0]->dtype) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the experts of layer ", layer, "'s ", proj, " differ in dtype (",
            std::string(dtypeName(views[0]->dtype)), " and ", std::string(dtypeName(t->dtype)), ")"));
      }
      views.push_back(t);
    }
    const size_t slice = views[0]->bytes;
    bool stacked = true;
    for (int e = 1; e < experts; ++e) {
      stacked = stacked && views[e]->data == static_cast<const char*>(views[0]->data) + e * slice;
    }
    kernels::BufferPtr buf;
    if (stacked) {
      ASSIGN_OR_RETURN(buf, backend_.importHost(views[0]->data, slice * experts));
    } else {
      ASSIGN_OR_RETURN(buf, backend_.allocate(slice * experts));
      for (int e = 0; e < experts; ++e) {
        backend_.upload(static_cast<char*>(buf->data()) + e * slice, views[e]->data, slice);
      }
    }
    Tensor out = Tensor::of(*buf, views[0]->dtype, rows * experts, cols);
    out_->buffers.push_back(std::move(buf));
    return out;
  }

  // a bias, converted to F32 (the matmul adds F32 biases only).
  absl::StatusOr<Tensor> bindBias(const std::string& name, int64_t n) {
    ASSIGN_OR_RETURN(const model::TensorView* t, check(name, 1, n));
    std::vector<float> values(n);
    quant::dequantizeRow(t->dtype, t->data, values.data(), n);
    ASSIGN_OR_RETURN(kernels::BufferPtr buf, backend_.allocate(n * sizeof(float)));
    backend_.upload(buf->data(), values.data(), n * sizeof(float));
    Tensor out = Tensor::of(*buf, DType::kF32, 1, n);
    out_->buffers.push_back(std::move(buf));
    return out;
  }

 private:
  absl::StatusOr<const model::TensorView*> check(const std::string& name, int64_t rows,
                                                 int64_t cols) {
    ASSIGN_OR_RETURN(const model::TensorView* t, weights_.tensor(name));
    if (t->numel() != rows * cols || t->shape.empty() || t->shape.back() != cols) {
      return absl::InvalidArgumentError(absl::StrCat("tensor ", name, " has shape [",
                                                     absl::StrJoin(t->shape, ", "), "], want [",
                                                     rows, ", ", cols, "]"));
    }
    if (t->dtype != DType::kF32 && t->dtype != DType::kF16 && t->dtype != DType::kBF16 &&
        !quant::isQuantized(t->dtype)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor ", name, " has dtype ", std::string(dtypeName(t->dtype)),
          "; only f32, f16, bf16, q8_0, q4_0, q4_k and q6_k are supported"));
    }
    return t;
  }

  const model::ModelWeights& weights_;
  kernels::Backend& backend_;
  ModelTensors* out_;
};

}  // namespace

absl::StatusOr<ModelTensors> bindModelTensors(const model::ModelWeights& weights,
                                              kernels::Backend& backend) {
  const model::ModelConfig& c = weights.config();
  RETURN_IF_ERROR(c.validate());
  ModelTensors m;
  Binder b(weights, backend, &m);
  const int64_t hidden = c.hidden_size, ffn = c.intermediate_size, hd = c.head_dim;
  const int64_t q_out = c.num_heads * hd, kv_out = c.num_kv_heads * hd;
  ASSIGN_OR_RETURN(m.embed, b.bindDense("model.embed_tokens.weight", c.vocab_size, hidden));
  ASSIGN_OR_RETURN(m.final_norm, b.bindDense("model.norm.weight", 1, hidden));
  if (weights.find("lm_head.weight") != nullptr) {
    ASSIGN_OR_RETURN(m.lm_head, b.bind("lm_head.weight", c.vocab_size, hidden));
  } else if (c.tie_word_embeddings) {
    // the output projection of a quantized table stays quantized.
    ASSIGN_OR_RETURN(m.lm_head, b.bind("model.embed_tokens.weight", c.vocab_size, hidden));
  } else {
    return absl::InvalidArgumentError("model has no lm_head.weight and untied embeddings");
  }
  for (int i = 0; i < c.num_layers; ++i) {
    const std::string p = absl::StrCat("model.layers.", i, ".");
    LayerTensors l;
    ASSIGN_OR_RETURN(l.attn_norm, b.bindDense(p + "input_layernorm.weight", 1, hidden));
    ASSIGN_OR_RETURN(l.ffn_norm, b.bindDense(p + "post_attention_layernorm.weight", 1, hidden));
    ASSIGN_OR_RETURN(l.q, b.bind(p + "self_attn.q_proj.weight", q_out, hidden));
    ASSIGN_OR_RETURN(l.k, b.bind(p + "self_attn.k_proj.weight", kv_out, hidden));
    ASSIGN_OR_RETURN(l.v, b.bind(p + "self_attn.v_proj.weight", kv_out, hidden));
    ASSIGN_OR_RETURN(l.o, b.bind(p + "self_attn.o_proj.weight", hidden, q_out));
    if (c.isMoe()) {
      const int64_t ef = c.moe_intermediate_size;
      // the router's logits decide which experts run: kept at full precision
      // (llama.cpp keeps ffn_gate_inp F32 in quantized files too)
      ASSIGN_OR_RETURN(l.router, b.bind(p + "mlp.gate.weight", c.num_experts, hidden));
      l.experts.num_experts = c.num_experts;
      ASSIGN_OR_RETURN(l.experts.gate, b.bindExperts(i, c.num_experts, "gate_proj", ef, hidden));
      ASSIGN_OR_RETURN(l.experts.up, b.bindExperts(i, c.num_experts, "up_proj", ef, hidden));
      ASSIGN_OR_RETURN(l.experts.down, b.bindExperts(i, c.num_experts, "down_proj", hidden, ef));
      if (l.experts.gate.dtype != l.experts.up.dtype) {
        return absl::InvalidArgumentError(absl::StrCat("layer ", i, ": the experts' gate and up projections differ in dtype"));
      }
    } else {
      ASSIGN_OR_RETURN(l.gate, b.bind(p + "mlp.gate_proj.weight", ffn, hidden));
      ASSIGN_OR_RETURN(l.up, b.bind(p + "mlp.up_proj.weight", ffn, hidden));
      ASSIGN_OR_RETURN(l.down, b.bind(p + "mlp.down_proj.weight", hidden, ffn));
    }
    if (c.attention_bias) {
      ASSIGN_OR_RETURN(l.q_bias, b.bindBias(p + "self_attn.q_proj.bias", q_out));
      ASSIGN_OR_RETURN(l.k_bias, b.bindBias(p + "self_attn.k_proj.bias", kv_out));
      ASSIGN_OR_RETURN(l.v_bias, b.bindBias(p + "self_attn.v_proj.bias", kv_out));
    }
    if (c.qk_norm) {
      ASSIGN_OR_RETURN(l.q_norm, b.bindDense(p + "self_attn.q_norm.weight", 1, hd));
      ASSIGN_OR_RETURN(l.k_norm, b.bindDense(p + "self_attn.k_norm.weight", 1, hd));
    }
    m.layers.push_back(std::move(l));
  }
  return m;
}

}  // namespace tandem::engine
