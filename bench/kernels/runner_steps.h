// The model runner driven the way llama-bench drives llama.cpp, for the
// benchmarks that time whole forward passes on any backend
// (bench/kernels/model_runner_bench.cc on the cpu, `tandem_gpu_check e2e` on
// a GPU): a prefill of one N-token prompt into an empty cache, and decode
// steps of B sequences together, each from an empty cache. Token ids are a
// fixed pseudo-random walk over the vocabulary.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/backend.h"
#include "server/engine/model_runner.h"
#include "server/model/weights.h"

namespace tandem::bench {

class RunnerSteps {
 public:
  static constexpr int kBlockSize = 16;

  // a runner over `weights` on `backend` with KV room for a `max_prompt`
  // prompt and `seqs` sequences of `max_decode` decode steps.
  static absl::StatusOr<std::unique_ptr<RunnerSteps>> create(const model::ModelWeights& weights,
                                                             kernels::Backend& backend,
                                                             int max_prompt, int max_decode,
                                                             int seqs, DType kv_dtype);

  // one forward of a `tokens`-token prompt for sequence 0 from position 0;
  // returns tokens computed.
  absl::StatusOr<int> prefill(int tokens);
  // `steps` decode steps of sequences [0, n) together, from position 0;
  // returns tokens computed (n * steps).
  absl::StatusOr<int> decode(int n, int steps);

  // decode steps replayed from captured graphs (ModelRunner::enableStepGraphs).
  void enableStepGraphs(bool on) { runner_->enableStepGraphs(on); }
  int64_t graphReplays() const { return runner_->graphReplays(); }

  // bytes a decode step streams: every weight but an untied embedding table.
  uint64_t weightBytesPerStep() const { return weight_bytes_; }
  // parameters of the matmuls (what 2 * params * tokens counts).
  uint64_t matmulParams() const { return matmul_params_; }
  const model::ModelConfig& config() const { return weights_.config(); }

 private:
  RunnerSteps(const model::ModelWeights& weights, engine::ModelRunnerPtr runner,
              std::vector<std::vector<int32_t>> tables);
  int32_t tokenAt(int i) const;

  const model::ModelWeights& weights_;
  engine::ModelRunnerPtr runner_;
  std::vector<std::vector<int32_t>> tables_;
  std::vector<float> logits_;
  uint64_t weight_bytes_ = 0, matmul_params_ = 0;
};

}  // namespace tandem::bench
