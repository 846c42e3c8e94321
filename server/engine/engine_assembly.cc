#include "server/engine/engine_assembly.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "kernels/cpu/cpu_backend.h"
#include "kvcache/cache_sizing.h"

namespace tandem::engine {
namespace {

constexpr double kDefaultMaxMemoryFraction = 0.10;

// the number of KV blocks the options ask for (see EngineAssemblyOptions).
absl::StatusOr<int64_t> chooseNumBlocks(const EngineAssemblyOptions& opts,
                                        const kvcache::KvLayout& layout, int max_model_len) {
  if (opts.kv_budget_bytes > 0) return kvcache::blocksForBudget(opts.kv_budget_bytes, layout);
  if (opts.kv_fraction > 0) return kvcache::blocksForMemoryFraction(opts.kv_fraction, layout);
  int64_t per_seq = (max_model_len + layout.block_size - 1) / layout.block_size;
  int64_t wanted = per_seq * opts.max_num_seqs;
  auto cap = kvcache::blocksForMemoryFraction(kDefaultMaxMemoryFraction, layout);
  return cap.ok() ? std::min(wanted, *cap) : wanted;
}

}  // namespace

absl::StatusOr<EngineAssemblyPtr> EngineAssembly::create(const std::string& model_path,
                                                   const EngineAssemblyOptions& options) {
  EngineAssemblyPtr le(new EngineAssembly());
  ASSIGN_OR_RETURN(le->weights_, model::ModelWeights::load(model_path));
  const model::ModelConfig& cfg = le->weights_->config();

  kernels::cpu::CpuBackendOptions backend_options;
  backend_options.num_threads = options.num_threads;
  ASSIGN_OR_RETURN(le->backend_, kernels::cpu::CpuBackend::create(backend_options));

  le->max_model_len_ = options.max_model_len > 0
                           ? std::min(options.max_model_len, cfg.max_position_embeddings)
                           : cfg.max_position_embeddings;
  kvcache::KvLayout layout;
  layout.num_layers = cfg.num_layers;
  layout.num_kv_heads = cfg.num_kv_heads;
  layout.head_dim = cfg.head_dim;
  layout.block_size = options.block_size;
  ASSIGN_OR_RETURN(int64_t blocks, chooseNumBlocks(options, layout, le->max_model_len_));
  if (blocks < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the KV cache budget holds no block of ", layout.blockBytes(), " bytes"));
  }
  le->num_blocks_ = static_cast<int>(std::min<int64_t>(blocks, 1 << 30));

  kernels::BufferPtr kv_storage;
  if (options.kv_storage) {
    ASSIGN_OR_RETURN(kv_storage, options.kv_storage(layout.blockBytes() *
                                                    static_cast<size_t>(le->num_blocks_)));
  }
  ASSIGN_OR_RETURN(le->runner_,
                   ModelRunner::create(*le->weights_, *le->backend_, le->num_blocks_,
                                       options.block_size, std::move(kv_storage)));
  EngineConfig ec;
  ec.num_blocks = le->num_blocks_;
  ec.block_size = options.block_size;
  ec.enable_prefix_caching = options.enable_prefix_caching;
  ec.scheduler.max_num_seqs = options.max_num_seqs;
  ec.scheduler.max_num_batched_tokens = options.max_num_batched_tokens;
  ec.scheduler.chunk_size = options.chunk_size;
  ec.scheduler.max_model_len = le->max_model_len_;
  ec.scheduler.eos_token_ids.assign(cfg.eos_token_ids.begin(), cfg.eos_token_ids.end());
  le->engine_ = std::make_unique<Engine>(ec, *le->runner_);
  return le;
}

}  // namespace tandem::engine
