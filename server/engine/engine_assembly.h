// Everything one process needs to generate with a model on this machine:
// the weights, a compute backend, the model runner with its KV storage and
// the engine loop, built from one set of options. `tandem generate` uses it
// directly; the worker's service wraps it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "generation/request_limits.h"
#include "kernels/backend.h"
#include "kernels/backend_factory.h"
#include "kvcache/tiers/kv_tier_chain.h"
#include "server/engine/engine.h"
#include "server/engine/kv_tier_options.h"
#include "server/engine/model_runner.h"
#include "server/engine/runner_block_io.h"
#include "server/engine/tier_onboard_connector.h"
#include "server/model/weights.h"

namespace tandem::engine {

struct EngineAssemblyOptions {
  // the compute backend (kernels/backend_factory.h) and, for hip, its GPU.
  kernels::BackendKind backend = kernels::BackendKind::kCpu;
  int device = 0;
  // compute threads of the cpu backend; 0 = one per hardware thread.
  int num_threads = 0;
  int block_size = 16;
  // the KV cache's element type: F32, or F16 (half the bytes a block, so
  // twice the blocks in a budget and half the reads of attention; BF16 works
  // too). Workers that move blocks between them must agree: their transfers
  // check the block size, which tells F32 from F16 but not F16 from BF16, so
  // the CLI (--kv-cache-dtype) offers f32 and f16 only.
  DType kv_dtype = DType::kF32;
  // KV cache budget: bytes, or (when kv_fraction > 0) a fraction of the
  // host's available memory. With neither, enough blocks for max_num_seqs
  // sequences of the full context, capped at 10% of available memory.
  uint64_t kv_budget_bytes = 0;
  double kv_fraction = 0.0;
  int max_num_seqs = 64;
  int max_num_batched_tokens = 512;
  int chunk_size = 512;
  // 0 = the model's max_position_embeddings.
  int max_model_len = 0;
  bool enable_prefix_caching = true;
  // decode steps launched op by op from the host, never replayed from a
  // captured graph (ModelRunner::enableStepGraphs; vLLM's --enforce-eager).
  // Graphs need a backend that captures (hip); the cpu backend has none.
  bool enforce_eager = false;
  // when set, called once with the KV storage's size in bytes; returns the
  // backend memory to hold it (host memory for the cpu backend, e.g. the
  // shared-memory region of the shm KV transport, so prefill workers on this
  // host write blocks straight into it). Empty = the backend allocates it.
  // Only for a backend whose memory is host memory
  // (kernels::backendUsesHostMemory): InvalidArgument otherwise.
  std::function<absl::StatusOr<kernels::BufferPtr>(size_t bytes)> kv_storage;
  // the KV tiers below the pool (G2 host, G3 disk); none by default.
  KvTierOptions tiers;
  // opens G3 when tiers.disk_path is set; empty = openDiskTier
  // (server/engine/disk_tier_opener.h). tests put their own tier here.
  DiskTierOpener open_disk_tier;
  // makes the backend `backend` names; empty = kernels::createBackend.
  // tests put the hip backend over the host emulator here.
  std::function<absl::StatusOr<std::unique_ptr<kernels::Backend>>(const kernels::BackendOptions&)>
      create_backend;
};

class EngineAssembly;
using EngineAssemblyPtr = std::unique_ptr<EngineAssembly>;

class EngineAssembly {
 public:
  // loads the model at `model_path` (HF dir or .gguf) and builds the rest.
  // errors: those of kernels::createBackend (the hip backend not built in,
  // no device), ModelWeights::load and ModelRunner::create, and
  // InvalidArgument for options that leave no room for a single sequence,
  // a G2 too small for one block, or tiers with prefix caching off; those of
  // opening G3.
  static absl::StatusOr<EngineAssemblyPtr> create(const std::string& model_path,
                                               const EngineAssemblyOptions& options);

  Engine& engine() { return *engine_; }
  // the compute backend the runner uses (e.g. for KvStaging's copies).
  kernels::Backend& backend() const { return *backend_; }
  const model::ModelWeights& weights() const { return *weights_; }
  const ModelRunner& runner() const { return *runner_; }
  int numBlocks() const { return num_blocks_; }
  // the tiers below the KV pool, or null when there are none.
  const kvcache::KvTierChain* kvTiers() const { return tiers_.get(); }
  // how G1 blocks moved to and from the tiers (zeros without tiers).
  RunnerBlockIo::Stats kvTierCopies() const {
    return block_io_ != nullptr ? block_io_->stats() : RunnerBlockIo::Stats{};
  }
  // the connector prompts onboard from the tiers through, or null.
  const TierOnboardConnector* tierConnector() const { return tier_connector_.get(); }
  int maxModelLen() const { return max_model_len_; }
  // what a request may ask of this engine: its context, the model's
  // vocabulary and the whole cache (generation::checkRequest against these
  // is what the engine asserts).
  generation::RequestLimits limits() const;
  // whether the KV storage (and every backend buffer) is host memory, which
  // the KV transport may read and write directly.
  bool kvInHostMemory() const { return kv_in_host_memory_; }

 private:
  EngineAssembly() = default;

  model::ModelWeightsPtr weights_;
  std::unique_ptr<kernels::Backend> backend_;
  ModelRunnerPtr runner_;
  // destroyed after the engine and before the runner whose blocks they copy.
  std::unique_ptr<RunnerBlockIo> block_io_;
  std::unique_ptr<kvcache::KvTierChain> tiers_;
  std::unique_ptr<TierOnboardConnector> tier_connector_;
  std::unique_ptr<Engine> engine_;
  int num_blocks_ = 0;
  int max_model_len_ = 0;
  bool kv_in_host_memory_ = true;
};

}  // namespace tandem::engine
