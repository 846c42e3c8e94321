#include "server/engine/model_runner.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace tandem::engine {

namespace {

using kernels::Tensor;

}  // namespace

kernels::RopeParams ropeParamsFor(const model::ModelConfig& c) {
  kernels::RopeParams p;
  p.style = c.rope_style == model::RopeStyle::kInterleaved ? kernels::RopeStyle::kInterleaved
                                                           : kernels::RopeStyle::kHalf;
  p.head_dim = c.head_dim;
  p.theta = c.rope_theta;
  p.llama3_scaling = c.rope_scaling == model::RopeScaling::kLlama3;
  p.factor = c.rope_factor;
  p.low_freq_factor = c.rope_low_freq_factor;
  p.high_freq_factor = c.rope_high_freq_factor;
  p.original_max_position = c.rope_original_max_position;
  // a GGUF carries llama3 scaling as per-pair factors (rope_freqs.weight)
  if (c.rope_scaling == model::RopeScaling::kFreqFactors) p.freq_factors = c.rope_freq_factors;
  return p;
}

absl::StatusOr<ModelRunnerPtr> ModelRunner::create(const model::ModelWeights& weights,
                                                   kernels::Backend& backend, int num_blocks,
                                                   int block_size, kernels::BufferPtr kv_storage,
                                                   DType kv_dtype) {
  if (num_blocks <= 0 || block_size <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad kv cache size: ", num_blocks, " blocks of ", block_size, " tokens"));
  }
  if (kv_dtype != DType::kF32 && kv_dtype != DType::kF16 && kv_dtype != DType::kBF16) {
    return absl::InvalidArgumentError(
        absl::StrCat("a KV cache of ", std::string(dtypeName(kv_dtype)), ": only f32, f16 and bf16 are supported"));
  }
  ModelRunnerPtr r(new ModelRunner(weights, backend));
  ASSIGN_OR_RETURN(r->tensors_, bindModelTensors(weights, backend));
  const model::ModelConfig& c = r->config_;
  r->cache_.layout = kvcache::KvLayout{c.num_layers, c.num_kv_heads, c.head_dim, block_size,
                                       kv_dtype};
  r->cache_.num_blocks = num_blocks;
  const size_t cache_bytes = r->cache_.layout.blockBytes() * static_cast<size_t>(num_blocks);
  if (kv_storage != nullptr) {
    if (kv_storage->bytes() < cache_bytes) {
      return absl::InvalidArgumentError(absl::StrCat("the given kv storage holds ", kv_storage->bytes(),
                                                     " bytes; ", cache_bytes, " are needed"));
    }
    r->cache_buffer_ = std::move(kv_storage);
  } else {
    ASSIGN_OR_RETURN(r->cache_buffer_, backend.allocate(cache_bytes));
  }
  r->cache_.data = r->cache_buffer_->data();
  r->rope_ = ropeParamsFor(c);
  if (c.isMoe()) {
    // zeroed here, before any reader (a scrape) can see the runner
    r->expert_tokens_ = std::make_unique<std::atomic<int64_t>[]>(static_cast<size_t>(c.num_layers) * c.num_experts);
  }
  r->attention_.num_heads = c.num_heads;
  r->attention_.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  return r;
}

void* ModelRunner::blockData(int id) const {
  TANDEM_CHECK(id >= 0 && id < cache_.num_blocks);
  return static_cast<char*>(cache_.data) + static_cast<size_t>(id) * cache_.layout.blockBytes();
}

absl::Status ModelRunner::validate(const Batch& batch) const {
  const int bs = cache_.layout.block_size;
  for (size_t s = 0; s < batch.seqs.size(); ++s) {
    const SequenceChunk& c = batch.seqs[s];
    if (c.tokens.empty() && (c.needs_logits || c.all_logits)) {
      return absl::InvalidArgumentError(absl::StrCat("chunk ", s, " asks for logits of no tokens"));
    }
    if (c.start_pos < 0) {
      return absl::InvalidArgumentError(absl::StrCat("chunk ", s, " starts at ", c.start_pos));
    }
    for (int32_t t : c.tokens) {
      if (t < 0 || t >= config_.vocab_size) {
        return absl::InvalidArgumentError(absl::StrCat("token id ", t, " of chunk ", s,
                                                       " is outside the vocabulary of ",
                                                       config_.vocab_size));
      }
    }
    const int64_t end = static_cast<int64_t>(c.start_pos) + static_cast<int64_t>(c.tokens.size());
    const int64_t blocks_needed = (end + bs - 1) / bs;
    if (static_cast<int64_t>(c.block_table.size()) < blocks_needed) {
      return absl::InvalidArgumentError(absl::StrCat("chunk ", s, " covers positions up to ", end,
                                                     " but its block table has ",
                                                     c.block_table.size(), " blocks of ", bs));
    }
    for (int64_t b = 0; b < blocks_needed; ++b) {
      if (c.block_table[b] < 0 || c.block_table[b] >= cache_.num_blocks) {
        return absl::InvalidArgumentError(absl::StrCat("chunk ", s, " names block ",
                                                       c.block_table[b], " of ",
                                                       cache_.num_blocks));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ModelRunner::reserve(int tokens, int logit_rows) {
  const model::ModelConfig& c = config_;
  if (tokens > capacity_tokens_) {
    // round up so a run of slightly growing batches does not reallocate each step
    const int cap = std::max(tokens, (tokens + 63) / 64 * 64);
    const int64_t q_width = static_cast<int64_t>(c.num_heads) * c.head_dim;
    const int64_t kv_width = static_cast<int64_t>(c.num_kv_heads) * c.head_dim;
    struct Want {
      Tensor* t;
      int64_t cols;
    };
    // a mixture of experts has no dense FFN: its buffers are the experts'
    const int64_t ffn = c.isMoe() ? 1 : c.intermediate_size;
    const int64_t experts = std::max(c.num_experts, 1), used = std::max(c.num_experts_used, 1);
    struct Sized {
      Tensor* t;
      int64_t rows, cols;
      DType dtype;
    };
    const Sized wants[] = {{&x_, cap, c.hidden_size, DType::kF32},  {&h_, cap, c.hidden_size, DType::kF32},
                           {&q_, cap, q_width, DType::kF32},        {&k_, cap, kv_width, DType::kF32},
                           {&v_, cap, kv_width, DType::kF32},       {&attn_, cap, q_width, DType::kF32},
                           {&gate_, cap, ffn, DType::kF32},         {&up_, cap, ffn, DType::kF32},
                           {&router_logits_, cap, experts, DType::kF32},
                           {&expert_ids_, int64_t{c.num_layers} * cap, used, DType::kI32},
                           {&expert_weights_, cap, used, DType::kF32},
                           {&moe_out_, c.isMoe() ? cap : 1, c.hidden_size, DType::kF32}};
    scratch_.clear();
    for (const Sized& w : wants) {
      ASSIGN_OR_RETURN(kernels::BufferPtr buf, backend_.allocate(w.rows * w.cols * 4));
      *w.t = Tensor::of(*buf, w.dtype, w.rows, w.cols);
      scratch_.push_back(std::move(buf));
    }
    h16_ = g16_ = Tensor();
    if (backend_.gemmInputType(cap, DType::kF16) != DType::kF32) {
      for (auto [t, cols] : {std::pair<Tensor*, int64_t>{&h16_, c.hidden_size}, {&g16_, ffn}}) {
        ASSIGN_OR_RETURN(kernels::BufferPtr buf, backend_.allocate(cap * cols * 2));
        *t = Tensor::of(*buf, DType::kF16, cap, cols);
        scratch_.push_back(std::move(buf));
      }
    }
    capacity_tokens_ = cap;
    capacity_logit_rows_ = 0;  // its buffers went with scratch_
    ++buffers_moved_;
  }
  if (logit_rows > capacity_logit_rows_) {
    const int cap = std::max(logit_rows, 8);
    ASSIGN_OR_RETURN(kernels::BufferPtr last, backend_.allocate(cap * c.hidden_size * sizeof(float)));
    ASSIGN_OR_RETURN(kernels::BufferPtr logits,
                     backend_.allocate(static_cast<size_t>(cap) * c.vocab_size * sizeof(float)));
    ASSIGN_OR_RETURN(kernels::BufferPtr picks, backend_.allocate(static_cast<size_t>(cap) * 8));
    last_ = Tensor::of(*last, DType::kF32, cap, c.hidden_size);
    logits_ = Tensor::of(*logits, DType::kF32, cap, c.vocab_size);
    pick_ids_ = Tensor::of(*picks, DType::kI32, cap, 1);
    pick_logprobs_ = Tensor::of(static_cast<char*>(picks->data()) + cap * sizeof(int32_t), DType::kF32, cap, 1);
    scratch_.push_back(std::move(last));
    scratch_.push_back(std::move(logits));
    scratch_.push_back(std::move(picks));
    capacity_logit_rows_ = cap;
    ++buffers_moved_;
  }
  return absl::OkStatus();
}

namespace {

// the context attention is launched for in a decode step: a power of two
// from 256 up, so a graph serves a stretch of steps (blocks past a
// sequence's own context return at once).
int contextBucket(int max_ctx) {
  int b = 256;
  while (b < max_ctx) b *= 2;
  return b;
}

bool isDecode(const Batch& batch) {
  for (const SequenceChunk& c : batch.seqs) {
    if (c.tokens.size() != 1 || !c.needs_logits) return false;
  }
  return !batch.seqs.empty();
}

}  // namespace

absl::Status ModelRunner::uploadStepData(const Batch& batch, bool decode) {
  const int tokens = batch.numTokens();
  const int bs = cache_.layout.block_size;
  std::vector<int32_t> ids, positions, slots, seq_info, tables, logit_rows;
  ids.reserve(tokens);
  positions.reserve(tokens);
  slots.reserve(tokens);
  int row = 0, max_q = 0, max_ctx = 0;
  for (const SequenceChunk& c : batch.seqs) {
    const int n = static_cast<int>(c.tokens.size());
    if (n == 0) continue;
    seq_info.insert(seq_info.end(), {row, n, c.start_pos, static_cast<int32_t>(tables.size())});
    const int blocks = (c.start_pos + n + bs - 1) / bs;
    tables.insert(tables.end(), c.block_table.begin(), c.block_table.begin() + blocks);
    for (int i = 0; i < n; ++i) {
      const int pos = c.start_pos + i;
      ids.push_back(c.tokens[i]);
      positions.push_back(pos);
      slots.push_back(c.block_table[pos / bs] * bs + pos % bs);
    }
    if (c.all_logits) {
      for (int i = 0; i < n; ++i) logit_rows.push_back(row + i);
    } else if (c.needs_logits) {
      logit_rows.push_back(row + n - 1);
    }
    row += n;
    max_q = std::max(max_q, n);
    max_ctx = std::max(max_ctx, c.start_pos + n);
  }
  // one upload of everything, each part at an offset that only the
  // capacities move: [ids | positions | slots | seq_info | logit rows |
  // tables], the first three capacity_tokens_ long, seq_info 4 a token
  if (static_cast<int64_t>(tables.size()) > step_tables_) {
    step_tables_ = std::max<int64_t>(static_cast<int64_t>(tables.size()) * 2, 1024);
    step_buffer_.reset();
  }
  const int64_t ct = capacity_tokens_, cl = capacity_logit_rows_;
  const int64_t offsets[] = {0, ct, 2 * ct, 3 * ct, 7 * ct, 7 * ct + cl};
  const size_t bytes = static_cast<size_t>(7 * ct + cl + step_tables_) * sizeof(int32_t);
  if (step_buffer_ == nullptr || step_buffer_->bytes() < bytes) {
    ASSIGN_OR_RETURN(step_buffer_, backend_.allocate(bytes));
    ++buffers_moved_;
  }
  step_host_.assign(bytes / sizeof(int32_t), 0);
  int part = 0;
  for (const auto* values : {&ids, &positions, &slots, &seq_info, &logit_rows, &tables}) {
    std::copy(values->begin(), values->end(), step_host_.begin() + offsets[part++]);
  }
  // through the last table entry: the rest of the buffer is never read
  const size_t used = static_cast<size_t>(offsets[5] + static_cast<int64_t>(tables.size()));
  backend_.upload(step_buffer_->data(), step_host_.data(), used * sizeof(int32_t));
  int32_t* base = static_cast<int32_t*>(step_buffer_->data());
  const int num_seqs = static_cast<int>(seq_info.size() / 4);
  ids_ = Tensor::of(base + offsets[0], DType::kI32, tokens, 1);
  positions_ = Tensor::of(base + offsets[1], DType::kI32, tokens, 1);
  slots_ = Tensor::of(base + offsets[2], DType::kI32, tokens, 1);
  attention_.seq_info =
      Tensor::of(base + offsets[3], DType::kI32, num_seqs, kernels::AttentionBatch::kSeqInfoCols);
  logit_rows_ = Tensor::of(base + offsets[4], DType::kI32, static_cast<int64_t>(logit_rows.size()), 1);
  attention_.block_tables =
      Tensor::of(base + offsets[5], DType::kI32, 1, static_cast<int64_t>(tables.size()));
  attention_.num_seqs = num_seqs;
  attention_.max_q_len = max_q;
  attention_.max_context = decode ? contextBucket(max_ctx) : max_ctx;
  return absl::OkStatus();
}

Tensor ModelRunner::gemmInput(int tokens, std::initializer_list<const Tensor*> weights,
                              const Tensor& f32, const Tensor& half) const {
  const DType type = backend_.gemmInputType(tokens, (*weights.begin())->dtype);
  if (type == DType::kF32 || half.data == nullptr) return f32;
  for (const Tensor* w : weights) {
    if (backend_.gemmInputType(tokens, w->dtype) != type) return f32;
  }
  return Tensor::of(half.data, type, tokens, half.cols);
}

Tensor ModelRunner::runLayer(int layer, int tokens, const Tensor& delta) {
  const model::ModelConfig& c = config_;
  const LayerTensors& w = tensors_.layers[layer];
  const float eps = c.rms_norm_eps;
  const Tensor x = x_.rowRange(0, tokens), h = h_.rowRange(0, tokens);
  const Tensor q = q_.rowRange(0, tokens), k = k_.rowRange(0, tokens), v = v_.rowRange(0, tokens);
  const Tensor attn = attn_.rowRange(0, tokens);
  const Tensor gate = gate_.rowRange(0, tokens), up = up_.rowRange(0, tokens);

  // attention block: x += o_proj(attention(rope(q), rope(k), v)); the
  // previous layer's residual add (its output `delta`) is fused with this
  // norm, the last layer's is runOps'
  const Tensor qkv_x = gemmInput(tokens, {&w.q, &w.k, &w.v}, h, h16_);
  if (layer == 0) {
    backend_.rmsNorm(x, w.attn_norm, eps, qkv_x);
  } else {
    backend_.addRmsNorm(x, delta, w.attn_norm, eps, qkv_x);
  }
  const kernels::Backend::MatmulOutput qkv[] = {{&w.q, w.q_bias ? &*w.q_bias : nullptr, &q},
                                                 {&w.k, w.k_bias ? &*w.k_bias : nullptr, &k},
                                                 {&w.v, w.v_bias ? &*w.v_bias : nullptr, &v}};
  backend_.matmuls(qkv_x, qkv);
  if (w.q_norm.has_value()) {
    const Tensor qh = q.reshaped(static_cast<int64_t>(tokens) * c.num_heads, c.head_dim);
    const Tensor kh = k.reshaped(static_cast<int64_t>(tokens) * c.num_kv_heads, c.head_dim);
    backend_.rmsNorm(qh, *w.q_norm, eps, qh);
    backend_.rmsNorm(kh, *w.k_norm, eps, kh);
  }
  backend_.ropeWriteKv(q, k, v, positions_, rope_, slots_, cache_, layer);
  backend_.pagedAttention(q, cache_, layer, attention_, attn);
  backend_.matmul(attn, w.o, nullptr, h);

  // mlp block: x += down(silu(gate(x')) * up(x')) (or the mixture of
  // experts), its input x' the norm of x after the attention block's
  // residual add (one fused op)
  if (c.isMoe()) {
    backend_.addRmsNorm(x, h, w.ffn_norm, eps, h);
    runMoe(layer, tokens, h);
    return moe_out_.rowRange(0, tokens);
  }
  const Tensor gate_up_x = gemmInput(tokens, {&w.gate, &w.up}, h, h16_);
  backend_.addRmsNorm(x, h, w.ffn_norm, eps, gate_up_x);
  const kernels::Backend::MatmulOutput gate_up[] = {{&w.gate, nullptr, &gate}, {&w.up, nullptr, &up}};
  backend_.matmuls(gate_up_x, gate_up);
  const Tensor down_x = gemmInput(tokens, {&w.down}, gate, g16_);
  backend_.siluMul(gate, up, down_x);
  backend_.matmul(down_x, w.down, nullptr, h);
  return h;
}

void ModelRunner::runMoe(int layer, int tokens, const Tensor& h) {
  const LayerTensors& w = tensors_.layers[layer];
  const Tensor logits = router_logits_.rowRange(0, tokens);
  // this layer's choices at rows [layer * tokens, ...): the step's count
  // reads every layer's at once after the step (a graph is for one batch
  // size, so it writes where the eager step did)
  const Tensor ids = expert_ids_.rowRange(static_cast<int64_t>(layer) * tokens, tokens);
  const Tensor weights = expert_weights_.rowRange(0, tokens);
  backend_.matmul(h, *w.router, nullptr, logits);
  backend_.moeRoute(logits, config_.norm_topk_prob, ids, weights);
  backend_.moeExperts(h, w.experts, ids, weights, moe_out_.rowRange(0, tokens));
}

void ModelRunner::countExpertTokens(int tokens) {
  const model::ModelConfig& c = config_;
  const int k = c.num_experts_used;
  ids_host_.resize(static_cast<size_t>(c.num_layers) * tokens * k);
  backend_.download(ids_host_.data(), expert_ids_.data, ids_host_.size() * sizeof(int32_t));
  for (int layer = 0; layer < c.num_layers; ++layer) {
    const int32_t* ids = ids_host_.data() + static_cast<size_t>(layer) * tokens * k;
    std::atomic<int64_t>* counts = expert_tokens_.get() + static_cast<size_t>(layer) * c.num_experts;
    for (int i = 0; i < tokens * k; ++i) {
      // one writer (the engine's thread): relaxed is enough for a counter
      if (ids[i] >= 0 && ids[i] < c.num_experts) counts[ids[i]].fetch_add(1, std::memory_order_relaxed);
    }
  }
}

std::vector<int64_t> ModelRunner::expertTokens() const {
  if (!config_.isMoe()) return {};
  std::vector<int64_t> out(static_cast<size_t>(config_.num_layers) * config_.num_experts, 0);
  if (expert_tokens_ == nullptr) return out;
  for (size_t i = 0; i < out.size(); ++i) out[i] = expert_tokens_[i].load(std::memory_order_relaxed);
  return out;
}

void ModelRunner::runOps(int tokens, int rows) {
  backend_.embedding(tensors_.embed, ids_, x_.rowRange(0, tokens));
  Tensor delta;
  for (int layer = 0; layer < config_.num_layers; ++layer) delta = runLayer(layer, tokens, delta);
  backend_.add(x_.rowRange(0, tokens), delta, x_.rowRange(0, tokens));
  if (rows == 0) return;
  // only the rows that need logits go through the final norm and lm head
  const Tensor last = last_.rowRange(0, rows);
  backend_.gatherRows(x_.rowRange(0, tokens), logit_rows_, last);
  backend_.rmsNorm(last, tensors_.final_norm, config_.rms_norm_eps, last);
  backend_.matmul(last, tensors_.lm_head, nullptr, logits_.rowRange(0, rows));
}

absl::Status ModelRunner::runDecodeGraph(int tokens, int rows) {
  if (graphs_moved_ != buffers_moved_ || graphs_.size() >= 64) {
    graphs_.clear();  // they read buffers that have moved, or too many shapes
    graphs_moved_ = buffers_moved_;
  }
  const std::pair<int, int> key{tokens, attention_.max_context};
  if (auto it = graphs_.find(key); it != graphs_.end()) {
    ++graph_replays_;
    return it->second->replay();
  }
  runOps(tokens, rows);
  auto graph = backend_.captureOps([&] { runOps(tokens, rows); });
  if (graph.ok()) {
    graphs_.emplace(key, std::move(*graph));
  } else if (absl::IsUnimplemented(graph.status())) {
    step_graphs_ = false;  // this backend has none
  } else {
    return graph.status();
  }
  return absl::OkStatus();
}

absl::Status ModelRunner::computeStep(const Batch& batch, int* rows) {
  RETURN_IF_ERROR(validate(batch));
  const int tokens = batch.numTokens();
  *rows = 0;
  if (tokens == 0) return absl::OkStatus();
  *rows = batch.numLogitRows();
  RETURN_IF_ERROR(reserve(tokens, *rows));
  const bool decode = isDecode(batch);
  RETURN_IF_ERROR(uploadStepData(batch, decode));
  if (decode && step_graphs_) {
    RETURN_IF_ERROR(runDecodeGraph(tokens, *rows));
  } else {
    runOps(tokens, *rows);
  }
  backend_.synchronize();
  if (config_.isMoe()) countExpertTokens(tokens);
  return absl::OkStatus();
}

absl::Status ModelRunner::forward(const Batch& batch, std::vector<float>* logits) {
  logits->clear();
  int rows = 0;
  RETURN_IF_ERROR(computeStep(batch, &rows));
  if (rows == 0) return absl::OkStatus();
  logits->resize(static_cast<size_t>(rows) * config_.vocab_size);
  backend_.download(logits->data(), logits_.data, static_cast<size_t>(rows) * config_.vocab_size * sizeof(float));
  return absl::OkStatus();
}

absl::Status ModelRunner::forwardPicks(const Batch& batch, std::span<const kernels::RowSampling> rows,
                                       std::vector<Pick>* picks) {
  picks->clear();
  if (rows.size() != static_cast<size_t>(batch.numLogitRows())) {
    return absl::InvalidArgumentError(absl::StrCat("forwardPicks: ", rows.size(), " samplings for ",
                                                   batch.numLogitRows(), " logit rows"));
  }
  int n = 0;
  RETURN_IF_ERROR(computeStep(batch, &n));
  if (n == 0) return absl::OkStatus();
  backend_.sampleTokens(logits_.rowRange(0, n), rows, pick_ids_.rowRange(0, n),
                        pick_logprobs_.rowRange(0, n));
  // ids and log-probabilities share one buffer: one download of both
  const size_t cap = static_cast<size_t>(pick_ids_.rows);
  std::vector<int32_t> host(2 * cap);
  backend_.download(host.data(), pick_ids_.data, host.size() * sizeof(int32_t));
  ++picked_steps_;
  picks->resize(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    (*picks)[r].token = host[r];
    std::memcpy(&(*picks)[r].logprob, &host[cap + r], sizeof(float));
  }
  return absl::OkStatus();
}

}  // namespace tandem::engine
