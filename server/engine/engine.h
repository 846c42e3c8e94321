// The worker's generation loop: one step() schedules a batch, runs the model
// on it, samples each logit row with its request's parameters and
// generator, and reports the new tokens. Single-threaded: the caller (the
// worker's service loop) owns the thread and calls addRequest/abort/step
// between steps.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "generation/sampling_params.h"
#include "generation/token_output.h"
#include "kvcache/kv_cache_manager.h"
#include "kvcache/tiers/kv_tier_chain.h"
#include "server/engine/kv_connector.h"
#include "server/engine/sampler.h"
#include "server/engine/scheduler.h"
#include "server/engine/step_model.h"
#include "text/grammar/grammar_cache.h"

namespace tandem::engine {

struct EngineConfig {
  SchedulerConfig scheduler;
  // KV cache: must match the model's KV storage (see kvcache/cache_sizing.h).
  int num_blocks = 0;
  int block_size = 16;
  bool enable_prefix_caching = true;
};

class Engine {
 public:
  // `model` is not owned and must outlive the engine.
  Engine(const EngineConfig& config, StepModel& model);

  // structured output: requests with a grammar compile it in `cache`
  // (against the model's vocabulary). unset: such requests are refused.
  // set before the first request.
  void setGrammarCache(std::shared_ptr<grammar::GrammarCache> cache) {
    grammars_ = std::move(cache);
  }

  // see Scheduler::addRequest. a request with a grammar gets its own
  // matcher, advanced over the last params.grammar_replay_tokens prompt
  // tokens (InvalidArgument when the grammar refuses them); each step masks
  // its logits to the tokens the grammar allows, and it finishes (kStop) once
  // its text is a complete sentence nothing may extend. `kv_source` is one
  // of the connectors added (or null): where the request's prompt KV comes
  // from, or that its blocks outlive it (server/engine/kv_connector.h).
  absl::Status addRequest(generation::SeqId id, std::vector<int32_t> prompt,
                          generation::SamplingParams params, KvConnector* kv_source = nullptr);

  // a connector requests may use (not owned, outlives the engine); before
  // the first request. Each step first takes what every connector landed
  // or released: a remote prefill's first token (carrying its logprobs as
  // the prefill worker sampled them) is checked against the request's
  // grammar (refused: the request prefills here instead) and advances a
  // non-greedy request's generator by the one draw Sampler::sample makes,
  // so a seeded request samples the same tokens as an aggregated run.
  void addKvConnector(KvConnector* connector) { scheduler_.addConnector(connector); }
  // given to every connector added: called when one has something landed
  // or released (see KvConnector::setWakeup). null to stop.
  void setKvWakeup(const std::function<void()>& wakeup);
  // compiles params.grammar, if any: its syntax errors are InvalidArgument,
  // and so is a grammar when no grammar cache is set. The request limits
  // are checked before the engine (generation::checkRequest) and asserted
  // by the scheduler. thread-safe.
  absl::Status checkGrammar(const generation::SamplingParams& params) const;
  // see Scheduler::abort (a held request's blocks are freed too).
  absl::Status abort(generation::SeqId id);
  bool hasUnfinished() const { return scheduler_.hasUnfinished(); }
  // see Scheduler::hasSchedulable.
  bool hasSchedulable() const { return scheduler_.hasSchedulable(); }
  // the last step computed nothing and preempted nothing: the waiting
  // requests wait for blocks that only a cancel or a connector can free, so
  // stepping again before one is pointless.
  bool stalled() const { return stalled_; }

  // runs one step and returns one output per token generated, in batch
  // order (empty when there was nothing to compute, or only prefill chunks).
  // when the model fails, every request of the step finishes with kError,
  // and one output with token -1 reports each of them.
  std::vector<generation::TokenOutput> step();

  const kvcache::KvCacheManager& kvCache() const { return kv_; }
  // receives the KV cache's events, the lower tiers' too (not owned, may be null).
  void setKvEventListener(kvcache::KvEventListener* listener);
  // the tiers below the KV cache (G2, G3): G1 evictions are offloaded to
  // them and kept under their watermarks between steps (prompts onboard
  // from them through a TierOnboardConnector). not owned; set before the
  // first request. null = none.
  void setKvTiers(kvcache::KvTierChain* tiers);
  const kvcache::KvTierChain* kvTiers() const { return tiers_; }
  const Scheduler& scheduler() const { return scheduler_; }

 private:
  std::vector<generation::TokenOutput> runStep();
  // what the connectors landed and released since the last step: the
  // outputs of remote prefills that completed.
  std::vector<generation::TokenOutput> collectKv();
  // a remote prefill's first token for `req`: false when its grammar
  // refuses it; else advances its generator as a local sample would.
  bool takeFirstToken(Request& req, const generation::TokenOutput& first);
  // the matcher of a request with a grammar (null without one), advanced
  // over its replayed prompt tokens.
  absl::StatusOr<std::unique_ptr<grammar::TokenMatcher>> makeMatcher(
      std::span<const int32_t> prompt, const generation::SamplingParams& params) const;
  std::vector<generation::TokenOutput> failStep(const Batch& batch);
  // whether the model samples where its logits are and no row of `batch`
  // needs more than its token and that token's log-probability (top
  // logprobs or prompt scores): the step then downloads only its tokens.
  bool picksWhereTheLogitsAre(const Batch& batch);
  // pick_rows_ = how each logit row of `batch` is sampled: its request's
  // params, seen tokens, grammar mask and (unless greedy) its draw.
  void describeSampling(const Batch& batch);
  // appends to req.prompt_logprobs the prompt tokens `chunk` (all_logits)
  // scores, from its rows of logits.
  static void scorePrompt(Request& req, const SequenceChunk& chunk, const float* logits,
                          size_t vocab);

  StepModel& model_;
  kvcache::KvCacheManager kv_;
  kvcache::KvTierChain* tiers_ = nullptr;
  Scheduler scheduler_;
  Sampler sampler_;
  std::shared_ptr<grammar::GrammarCache> grammars_;
  // reused across steps.
  std::vector<float> logits_;
  std::vector<StepModel::Pick> picks_;
  std::vector<kernels::RowSampling> pick_rows_;
  // the grammar rows' masks, which pick_rows_ point into (a vector's buffer
  // stays where it is when the outer vector grows and moves it)
  std::vector<std::vector<uint64_t>> pick_masks_;
  bool stalled_ = false;
};

}  // namespace tandem::engine
