#include "bench/kernels/runner_steps.h"

#include <algorithm>

#include "common/status.h"

namespace tandem::bench {

absl::StatusOr<std::unique_ptr<RunnerSteps>> RunnerSteps::create(
    const model::ModelWeights& weights, kernels::Backend& backend, int max_prompt, int max_decode,
    int seqs, DType kv_dtype) {
  // sequence 0 holds the prompt or a decode, the others decodes only
  auto blocksFor = [](int tokens) { return (tokens + 1 + kBlockSize - 1) / kBlockSize; };
  std::vector<std::vector<int32_t>> tables(std::max(seqs, 1));
  int next = 0;
  for (size_t s = 0; s < tables.size(); ++s) {
    const int blocks = blocksFor(s == 0 ? std::max(max_prompt, max_decode) : max_decode);
    for (int b = 0; b < blocks; ++b) tables[s].push_back(next++);
  }
  ASSIGN_OR_RETURN(engine::ModelRunnerPtr runner,
                   engine::ModelRunner::create(weights, backend, next, kBlockSize, nullptr,
                                               kv_dtype));
  return std::unique_ptr<RunnerSteps>(
      new RunnerSteps(weights, std::move(runner), std::move(tables)));
}

RunnerSteps::RunnerSteps(const model::ModelWeights& weights, engine::ModelRunnerPtr runner,
                         std::vector<std::vector<int32_t>> tables)
    : weights_(weights), runner_(std::move(runner)), tables_(std::move(tables)) {
  const model::ModelConfig& config = weights.config();
  for (const auto& [name, t] : weights.tensors()) {
    const bool embedding = name == "model.embed_tokens.weight";
    // a mixture's token reads num_experts_used of each layer's experts
    const bool expert = name.find(".mlp.experts.") != std::string::npos;
    const uint64_t share = expert ? config.num_experts : 1, used = expert ? config.num_experts_used : 1;
    if (!embedding || config.tie_word_embeddings) weight_bytes_ += t.bytes * used / share;
    if (!embedding && t.shape.size() == 2) {
      matmul_params_ += static_cast<uint64_t>(t.shape[0]) * static_cast<uint64_t>(t.shape[1]) * used / share;
    }
  }
  if (config.tie_word_embeddings) {
    matmul_params_ += static_cast<uint64_t>(config.vocab_size) * config.hidden_size;
  }
}

int32_t RunnerSteps::tokenAt(int i) const {
  return static_cast<int32_t>((i * 7919 + 13) % weights_.config().vocab_size);
}

absl::StatusOr<int> RunnerSteps::prefill(int tokens) {
  std::vector<int32_t> ids(tokens);
  for (int i = 0; i < tokens; ++i) ids[i] = tokenAt(i);
  engine::Batch b{{{0, ids, 0, tables_[0], true}}};
  RETURN_IF_ERROR(runner_->forward(b, &logits_));
  return tokens;
}

absl::StatusOr<int> RunnerSteps::decode(int n, int steps) {
  for (int step = 0; step < steps; ++step) {
    engine::Batch b;
    for (int s = 0; s < n; ++s) {
      b.seqs.push_back({static_cast<generation::SeqId>(s), {tokenAt(step + s)}, step, tables_[s], true});
    }
    RETURN_IF_ERROR(runner_->forward(b, &logits_));
  }
  return n * steps;
}

}  // namespace tandem::bench
