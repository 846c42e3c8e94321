// The model's weights as backend tensors, bound once when the runner is
// created: each tensor the forward pass reads, checked against the shape the
// config implies and imported into the backend (aliased in place by host
// backends, copied by device backends).
#pragma once

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/backend.h"
#include "server/model/weights.h"

namespace tandem::engine {

struct LayerTensors {
  kernels::Tensor attn_norm, ffn_norm;
  kernels::Tensor q, k, v, o;        // [out, in]
  kernels::Tensor gate, up, down;    // [out, in]; unset in a mixture of experts
  std::optional<kernels::Tensor> router;  // [experts, hidden] (a mixture of experts)
  kernels::MoeExperts experts;            // stacked, as kernels::MoeExperts describes
  std::optional<kernels::Tensor> q_bias, k_bias, v_bias;  // F32 (qwen2)
  std::optional<kernels::Tensor> q_norm, k_norm;          // [head_dim] (qwen3)
};

struct ModelTensors {
  kernels::Tensor embed;    // [vocab, hidden]
  kernels::Tensor final_norm;
  kernels::Tensor lm_head;  // [vocab, hidden]; the embedding when tied
  std::vector<LayerTensors> layers;
  // the device memory behind the tensors above
  std::vector<kernels::BufferPtr> buffers;
};

// InvalidArgument naming the tensor when one is missing, has an unexpected
// shape or a dtype the backends do not compute with (only F32, F16, BF16
// and the quantized q8_0, q4_0, q4_k, q6_k), or when one layer's experts of
// a projection differ in dtype. A layer's experts of one projection become
// one stacked tensor: imported at once where the file holds them so (GGUF's
// stacked tensors), else copied together into a new buffer (HF's tensors).
absl::StatusOr<ModelTensors> bindModelTensors(const model::ModelWeights& weights,
                                              kernels::Backend& backend);

}  // namespace tandem::engine
