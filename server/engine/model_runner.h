// ModelRunner: the Llama-family forward pass over a paged KV cache, written
// against kernels::Backend. One forward() computes one scheduler step: every
// token of every chunk of the Batch (prefill chunks and decode tokens alike)
// goes through the matmuls together, attention reads each sequence's blocks
// through its block table, and logits come back for the chunks that ask.
#pragma once

#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/backend.h"
#include "kvcache/kv_layout.h"
#include "server/engine/batch.h"
#include "server/engine/model_runner_weights.h"
#include "server/engine/step_model.h"
#include "server/model/weights.h"

namespace tandem::engine {

// the rotary embedding of a model: its style, base and scaling, whether the
// scaling came as llama3 parameters (HF) or per-pair factors (GGUF).
kernels::RopeParams ropeParamsFor(const model::ModelConfig& config);

class ModelRunner;
using ModelRunnerPtr = std::unique_ptr<ModelRunner>;

class ModelRunner : public StepModel {
 public:
  // binds `weights` to `backend` and allocates the KV storage: num_blocks
  // blocks of block_size token slots, their K and V elements of `kv_dtype`
  // (F32, or F16 / BF16: half the bytes, rounded to nearest when written;
  // attention reads them back as F32). `weights` and `backend` must
  // outlive the runner. `kv_storage`, when given, is device memory of
  // `backend` used as the KV storage instead of a fresh allocation (e.g. a
  // shared-memory region the KV transport's receiver exports to prefill
  // workers); the runner keeps it. InvalidArgument when the weights do not
  // match their config or use an unsupported dtype, the sizes are not
  // positive, kv_dtype is none of F32, F16, BF16, or kv_storage is smaller
  // than the storage; ResourceExhausted when the KV storage cannot be
  // allocated.
  static absl::StatusOr<ModelRunnerPtr> create(const model::ModelWeights& weights,
                                               kernels::Backend& backend, int num_blocks,
                                               int block_size,
                                               kernels::BufferPtr kv_storage = nullptr,
                                               DType kv_dtype = DType::kF32);

  // computes one step. Writes the K/V of every token of `batch` into its
  // slots, and sets *logits to [batch.numLogitRows(), vocab] F32 in batch
  // order: every token's logits of a chunk with all_logits, the last
  // token's of one with needs_logits.
  // InvalidArgument (and no cache change) when a token id is out of the
  // vocabulary, a block table does not cover its chunk, or a block id is out
  // of range.
  absl::Status forward(const Batch& batch, std::vector<float>* logits) override;  // StepModel
  // the tokens sampled on the backend (Backend::sampleTokens) when
  // setPicksWhereTheLogitsAre(true): the engine sets it for a device
  // backend, whose logits would otherwise cross to the host every step.
  bool picksWhereTheLogitsAre() const override { return picks_on_backend_; }  // StepModel
  absl::Status forwardPicks(const Batch& batch, std::span<const kernels::RowSampling> rows,
                            std::vector<Pick>* picks) override;  // StepModel
  void setPicksWhereTheLogitsAre(bool on) { picks_on_backend_ = on; }
  // steps whose tokens were picked on the backend so far (for tests).
  int64_t pickedSteps() const { return picked_steps_; }

  // decode steps (every chunk one token that needs logits) replayed as one
  // captured graph of the backend's ops, where the backend captures
  // (Backend::captureOps: hip); keyed by batch size and a power-of-two
  // bucket of the longest context (attention is launched for the bucket,
  // in eager steps too, so a step's numbers do not depend on graphs).
  // Off by default; the engine turns it on unless --enforce-eager.
  void enableStepGraphs(bool on) { step_graphs_ = on; }
  // decode steps replayed from a graph so far (for tests and benchmarks).
  int64_t graphReplays() const { return graph_replays_; }

  // tokens routed to each expert so far, [layer * num_experts + expert]
  // (empty for a dense model): each step's choices counted once its logits
  // are back. A snapshot, safe from any thread (a metrics scrape) while
  // the engine steps. The expert choice is not state: it is recomputed
  // from the hidden state every step, so the KV cache holds attention's
  // keys and values only, as for a dense model.
  std::vector<int64_t> expertTokens() const;

  const model::ModelConfig& config() const { return config_; }
  const kvcache::KvLayout& kvLayout() const { return cache_.layout; }
  int numBlocks() const { return cache_.num_blocks; }
  // the whole KV storage (device memory of the backend), e.g. for
  // Backend::copyBlocks / gatherBlocks when blocks move between workers or tiers.
  const kernels::KvCacheView& kvCache() const { return cache_; }
  // device address of block `id`: kvLayout().blockBytes() bytes.
  void* blockData(int id) const;

 private:
  ModelRunner(const model::ModelWeights& weights, kernels::Backend& backend)
      : config_(weights.config()), backend_(backend) {}

  absl::Status validate(const Batch& batch) const;
  // grows the activation buffers to hold `tokens` rows and `logit_rows` rows.
  absl::Status reserve(int tokens, int logit_rows);
  // builds and uploads ids, positions, slots, attention metadata and logit
  // rows, at offsets fixed by the buffers' capacities (a graph reads them
  // where it was captured). `decode`: attention sized for the context bucket.
  absl::Status uploadStepData(const Batch& batch, bool decode);
  // every op of the step: embedding, layers, the logit rows' norm and head.
  void runOps(int tokens, int rows);
  // validates, uploads and runs `batch` to the end of its ops; *rows = its
  // logit rows, in logits_.
  absl::Status computeStep(const Batch& batch, int* rows);
  // one layer; returns its output (the mlp's or the experts'), which the
  // next layer's first norm adds to the residual stream x (`delta`: the
  // previous layer's; none for layer 0).
  kernels::Tensor runLayer(int layer, int tokens, const kernels::Tensor& delta);
  // x of a `tokens`-row matmul of `weights` (sharing it): `f32` (h_ or
  // gate_) unless the backend's GEMM wants 16-bit x for every one of them
  // (Backend::gemmInputType); then the same rows of `half` (h16_, g16_) in
  // that type, which the op before the matmul writes.
  kernels::Tensor gemmInput(int tokens, std::initializer_list<const kernels::Tensor*> weights,
                            const kernels::Tensor& f32, const kernels::Tensor& half) const;
  // the FFN of a mixture of experts: router, top-k, the chosen experts.
  void runMoe(int layer, int tokens, const kernels::Tensor& h);
  // adds the step's choices (layers x tokens x k ids) to expert_tokens_.
  void countExpertTokens(int tokens);
  // the step's ops from the graph of its shape, captured on first sight
  // (that step runs eagerly first: it grows every workspace the graph needs).
  absl::Status runDecodeGraph(int tokens, int rows);

  model::ModelConfig config_;
  kernels::Backend& backend_;
  ModelTensors tensors_;
  kernels::BufferPtr cache_buffer_;
  kernels::KvCacheView cache_;
  kernels::RopeParams rope_;

  // step scratch, reused across steps; sized for capacity_tokens_ rows.
  int capacity_tokens_ = 0;
  int capacity_logit_rows_ = 0;
  std::vector<kernels::BufferPtr> scratch_;
  kernels::Tensor x_, h_, q_, k_, v_, attn_, gate_, up_;
  // 16-bit x of the GEMMs, where the backend wants it (gemmInput): the
  // norms' output [cap, hidden] and silu(gate) * up [cap, ffn]; typed at use
  // (F16 or BF16), empty on backends that want F32.
  kernels::Tensor h16_, g16_;
  // mixtures of experts: router logits [cap, experts], the choices of
  // every layer [layers * cap, k] (layer l's at rows [l * tokens, ..), kept
  // for the step's count) and their
  // weights [cap, k], the experts' output [cap, hidden]
  kernels::Tensor router_logits_, expert_ids_, expert_weights_, moe_out_;
  std::unique_ptr<std::atomic<int64_t>[]> expert_tokens_;  // layers * experts, or null
  std::vector<int32_t> ids_host_;
  kernels::Tensor last_, logits_;
  // picks [cap rows]: ids (I32) then log-probabilities (F32), one buffer
  // so a step downloads them at once.
  kernels::Tensor pick_ids_, pick_logprobs_;
  bool picks_on_backend_ = false;
  int64_t picked_steps_ = 0;
  // per-step index data: one host staging vector, one device buffer with
  // room for step_tables_ block-table entries.
  std::vector<int32_t> step_host_;
  kernels::BufferPtr step_buffer_;
  int64_t step_tables_ = 0;
  kernels::Tensor ids_, positions_, slots_, logit_rows_;
  kernels::AttentionBatch attention_;

  // decode graphs by (tokens, context bucket); all dropped when a buffer
  // they read moves (buffers_moved_ counts reallocations).
  bool step_graphs_ = false;
  uint64_t buffers_moved_ = 0, graphs_moved_ = 0;
  std::map<std::pair<int, int>, kernels::OpGraphPtr> graphs_;
  int64_t graph_replays_ = 0;
};

}  // namespace tandem::engine
