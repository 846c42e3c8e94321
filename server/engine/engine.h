// The worker's generation loop: one step() schedules a batch, runs the model
// on it, samples each logit row with its request's parameters and
// generator, and reports the new tokens. Single-threaded: the caller (the
// worker's service loop) owns the thread and calls addRequest/abort/step
// between steps.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kvcache/kv_cache_manager.h"
#include "server/engine/sampler.h"
#include "server/engine/scheduler.h"
#include "server/engine/step_model.h"

namespace tandem::engine {

struct EngineConfig {
  SchedulerConfig scheduler;
  // KV cache: must match the model's KV storage (see kvcache/cache_sizing.h).
  int num_blocks = 0;
  int block_size = 16;
  bool enable_prefix_caching = true;
};

// one new token of one request.
struct EngineOutput {
  SeqId id = 0;
  int32_t token = 0;
  // log-probability of `token` under the raw logits, and the top ones when
  // the request asked for logprobs.
  float logprob = 0.0f;
  std::vector<TokenLogprob> top_logprobs;
  FinishReason finish_reason = FinishReason::kNone;
  int num_prompt_tokens = 0;
  int num_output_tokens = 0;
  int num_cached_tokens = 0;

  bool finished() const { return finish_reason != FinishReason::kNone; }
};

class Engine {
 public:
  // `model` is not owned and must outlive the engine.
  Engine(const EngineConfig& config, StepModel& model);

  // see Scheduler::addRequest.
  absl::Status addRequest(SeqId id, std::vector<int32_t> prompt, SamplingParams params);
  // see Scheduler::checkRequest (thread-safe).
  absl::Status checkRequest(int64_t prompt_len, const SamplingParams& params) const {
    return scheduler_.checkRequest(prompt_len, params);
  }
  // see Scheduler::abort.
  absl::Status abort(SeqId id);
  bool hasUnfinished() const { return scheduler_.hasUnfinished(); }

  // runs one step and returns one output per token generated, in batch
  // order (empty when there was nothing to compute, or only prefill chunks).
  // when the model fails, every request of the step finishes with kError,
  // and one output with token -1 reports each of them.
  std::vector<EngineOutput> step();

  const kvcache::KvCacheManager& kvCache() const { return kv_; }
  const Scheduler& scheduler() const { return scheduler_; }

 private:
  std::vector<EngineOutput> failStep(const Batch& batch);

  StepModel& model_;
  kvcache::KvCacheManager kv_;
  Scheduler scheduler_;
  Sampler sampler_;
  // reused across steps.
  std::vector<float> logits_;
};

}  // namespace tandem::engine
