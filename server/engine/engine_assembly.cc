#include "server/engine/engine_assembly.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "kvcache/cache_sizing.h"
#include "kvcache/tiers/host_tier.h"
#include "server/engine/disk_tier_opener.h"
#include "server/engine/runner_block_io.h"
#include "server/model/weights_identity.h"
#include "text/grammar/token_vocabulary.h"
#include "text/tokenizer/tokenizer.h"

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

// G2's slots in `backend`'s page-locked memory, so that the transfer
// stream's copies of evicted blocks into them are DMA; null (the tier then
// allocates plain memory, and says so) when it cannot be had.
kvcache::HostTier::Arena pinnedArena(kernels::Backend& backend, size_t bytes) {
  absl::StatusOr<kernels::BufferPtr> buf = backend.allocatePinnedHost(bytes);
  if (!buf.ok()) {
    std::fprintf(stderr, "tandem: the host KV tier is pageable memory (%s): its copies run slower\n",
                 buf.status().ToString().c_str());
    return nullptr;
  }
  auto* data = static_cast<std::byte*>((*buf)->data());
  std::shared_ptr<kernels::Buffer> owner(std::move(*buf));
  return kvcache::HostTier::Arena(data, [owner](std::byte*) {});
}

// the tiers the options ask for, over the runner's KV storage; null for
// none. `device`: the backend whose device memory holds G1 (null: host
// memory), which pins G2.
absl::StatusOr<std::unique_ptr<kvcache::KvTierChain>> buildTiers(
    const EngineAssemblyOptions& opts, const model::ModelWeights& weights,
    const kvcache::KvLayout& layout, kvcache::KvBlockIo& g1, kernels::Backend* device) {
  const KvTierOptions& t = opts.tiers;
  if (t.host_bytes == 0 && t.disk_path.empty()) return nullptr;
  if (!opts.enable_prefix_caching) {
    return absl::InvalidArgumentError(
        "--kv-host-bytes / --kv-disk-path keep blocks for prefix hits: they need prefix "
        "caching (drop --no-prefix-cache)");
  }
  auto chain = std::make_unique<kvcache::KvTierChain>(g1);
  if (t.host_bytes > 0) {
    const int64_t blocks = kvcache::blocksForBudget(t.host_bytes, layout);
    if (blocks < 1) {
      return absl::InvalidArgumentError(absl::StrCat("--kv-host-bytes ", t.host_bytes,
                                                     " holds no KV block of ",
                                                     layout.blockBytes(), " bytes"));
    }
    const size_t bytes = static_cast<size_t>(blocks) * layout.blockBytes();
    chain->setHostTier(std::make_unique<kvcache::HostTier>(
        layout.blockBytes(), blocks, device != nullptr ? pinnedArena(*device, bytes) : nullptr));
  }
  if (!t.disk_path.empty()) {
    DiskTierRequest request;
    request.options = t;
    request.block_bytes = layout.blockBytes();
    request.fingerprint.architecture = weights.config().architecture;
    request.fingerprint.num_layers = layout.num_layers;
    request.fingerprint.num_kv_heads = layout.num_kv_heads;
    request.fingerprint.head_dim = layout.head_dim;
    request.fingerprint.block_size = layout.block_size;
    request.fingerprint.dtype = layout.dtype;
    request.fingerprint.weights_id = model::weightsIdentity(weights);
    const DiskTierOpener& open = opts.open_disk_tier ? opts.open_disk_tier : openDiskTier;
    ASSIGN_OR_RETURN(OpenedDiskTier disk, open(request));
    if (disk.tier == nullptr || disk.tier->blockBytes() != layout.blockBytes()) {
      return absl::InternalError("the disk tier's block size does not match the KV cache");
    }
    chain->setDiskTier(std::move(disk.tier), std::move(disk.io_mode), std::move(disk.recovered));
  }
  return chain;
}

}  // namespace

absl::StatusOr<EngineAssemblyPtr> EngineAssembly::create(const std::string& model_path,
                                                   const EngineAssemblyOptions& options) {
  EngineAssemblyPtr le(new EngineAssembly());
  le->kv_in_host_memory_ = kernels::backendUsesHostMemory(options.backend);
  if (options.kv_storage && !le->kv_in_host_memory_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the ", std::string(kernels::backendKindName(options.backend)),
        " backend keeps the KV cache in device memory: it cannot use given host KV storage"));
  }
  // the backend first: a missing device is the clearest error, and costs
  // no model load.
  kernels::BackendOptions backend_options;
  backend_options.kind = options.backend;
  backend_options.device = options.device;
  backend_options.num_threads = options.num_threads;
  ASSIGN_OR_RETURN(le->backend_, options.create_backend
                                     ? options.create_backend(backend_options)
                                     : kernels::createBackend(backend_options));
  ASSIGN_OR_RETURN(le->weights_, model::ModelWeights::load(model_path));
  const model::ModelConfig& cfg = le->weights_->config();

  le->max_model_len_ = options.max_model_len > 0
                           ? std::min(options.max_model_len, cfg.max_position_embeddings)
                           : cfg.max_position_embeddings;
  kvcache::KvLayout layout;
  layout.num_layers = cfg.num_layers;
  layout.num_kv_heads = cfg.num_kv_heads;
  layout.head_dim = cfg.head_dim;
  layout.block_size = options.block_size;
  layout.dtype = options.kv_dtype;
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
                                       options.block_size, std::move(kv_storage), options.kv_dtype));
  le->runner_->enableStepGraphs(!options.enforce_eager);
  // a device backend's greedy rows are picked on the device: a step
  // downloads its tokens, not [rows, vocab] logits
  le->runner_->setPicksWhereTheLogitsAre(!le->kv_in_host_memory_);
  EngineConfig ec;
  ec.num_blocks = le->num_blocks_;
  ec.block_size = options.block_size;
  ec.enable_prefix_caching = options.enable_prefix_caching;
  ec.scheduler.max_num_seqs = options.max_num_seqs;
  ec.scheduler.max_num_batched_tokens = options.max_num_batched_tokens;
  ec.scheduler.chunk_size = options.chunk_size;
  ec.scheduler.max_model_len = le->max_model_len_;
  ec.scheduler.eos_token_ids.assign(cfg.eos_token_ids.begin(), cfg.eos_token_ids.end());
  // prompt scoring's logits: at most kPromptLogitBytes a step (128 rows
  // for a 128k vocabulary), and never fewer than 16 rows.
  constexpr int64_t kPromptLogitBytes = int64_t{64} << 20;
  const int64_t rows = std::max<int64_t>(
      16, kPromptLogitBytes / (int64_t{cfg.vocab_size} * static_cast<int64_t>(sizeof(float))));
  ec.scheduler.max_prompt_logprob_rows =
      static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(rows, options.max_num_batched_tokens)));
  le->engine_ = std::make_unique<Engine>(ec, *le->runner_);
  // structured output needs each token's bytes: without a tokenizer (a
  // weights-only model) requests with a grammar are refused.
  if (absl::StatusOr<tokenizer::TokenizerPtr> tok = tokenizer::Tokenizer::load(model_path);
      tok.ok()) {
    le->engine_->setGrammarCache(std::make_shared<grammar::GrammarCache>(
        grammar::TokenVocabulary::fromTokenizer(**tok, ec.scheduler.eos_token_ids)));
  }
  // the CPU backend's KV storage is host memory: tiers copy it directly; a
  // device backend's is reached through a transfer stream (made only when
  // there are tiers).
  if (options.tiers.host_bytes > 0 || !options.tiers.disk_path.empty()) {
    le->block_io_ =
        std::make_unique<RunnerBlockIo>(*le->runner_, *le->backend_, le->kv_in_host_memory_);
    ASSIGN_OR_RETURN(le->tiers_,
                     buildTiers(options, *le->weights_, layout, *le->block_io_,
                                le->kv_in_host_memory_ ? nullptr : le->backend_.get()));
  }
  le->engine_->setKvTiers(le->tiers_.get());
  if (le->tiers_ != nullptr && !le->tiers_->empty()) {
    // prompts onboard from the tiers, before any other connector is asked.
    le->tier_connector_ =
        std::make_unique<TierOnboardConnector>(*le->tiers_, options.block_size);
    le->engine_->addKvConnector(le->tier_connector_.get());
  }
  return le;
}

generation::RequestLimits EngineAssembly::limits() const {
  return {.max_model_len = max_model_len_,
          .vocab_size = weights_->config().vocab_size,
          .max_kv_tokens = int64_t{num_blocks_} * engine_->kvCache().blockSize()};
}

}  // namespace tandem::engine
