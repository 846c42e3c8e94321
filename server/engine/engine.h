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
#include "kvcache/kv_cache_manager.h"
#include "server/engine/generation_types.h"
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
  // its text is a complete sentence nothing may extend.
  absl::Status addRequest(SeqId id, std::vector<int32_t> prompt, SamplingParams params,
                          bool hold_blocks_on_finish = false);

  // ---- disaggregated serving (see Scheduler) ----
  // see Scheduler::admitAwaitingKv; the blocks are kvCache().blockTable(id).
  absl::StatusOr<int> admitAwaitingKv(SeqId id, std::vector<int32_t> prompt,
                                      SamplingParams params);
  // see Scheduler::completeRemotePrefill. `first` carries the token and its
  // logprobs as the prefill worker sampled them; the returned output has
  // them and this engine's counts (prompt, cached, output tokens, finish
  // reason). a non-greedy sample draws exactly once from the request's
  // generator (Sampler::sample), so the generator is advanced by one draw
  // here: a seeded request then samples the same tokens as an aggregated
  // run would. NotFound when `id` is not awaiting KV; InvalidArgument (and
  // nothing changes) when the request's grammar refuses the token.
  absl::StatusOr<TokenOutput> completeRemotePrefill(SeqId id, const TokenOutput& first);
  // see Scheduler::failRemotePrefill.
  absl::Status failRemotePrefill(SeqId id) { return scheduler_.failRemotePrefill(id); }
  // see Scheduler::releaseHeld.
  bool releaseHeld(SeqId id) { return scheduler_.releaseHeld(id); }
  bool isHeld(SeqId id) const { return scheduler_.isHeld(id); }
  // compiles params.grammar, if any: its syntax errors are InvalidArgument,
  // and so is a grammar when no grammar cache is set. The request limits
  // are checked before the engine (generation::checkRequest) and asserted
  // by the scheduler. thread-safe.
  absl::Status checkGrammar(const SamplingParams& params) const;
  // see Scheduler::abort.
  absl::Status abort(SeqId id);
  bool hasUnfinished() const { return scheduler_.hasUnfinished(); }
  // see Scheduler::hasSchedulable.
  bool hasSchedulable() const { return scheduler_.hasSchedulable(); }
  // the last step computed nothing and preempted nothing: the waiting
  // requests wait for blocks that only a cancel, release or remote-prefill
  // call can free, so stepping again before one is pointless.
  bool stalled() const { return stalled_; }

  // runs one step and returns one output per token generated, in batch
  // order (empty when there was nothing to compute, or only prefill chunks).
  // when the model fails, every request of the step finishes with kError,
  // and one output with token -1 reports each of them.
  std::vector<TokenOutput> step();

  const kvcache::KvCacheManager& kvCache() const { return kv_; }
  // receives the KV cache's events, the lower tiers' too (not owned, may be null).
  void setKvEventListener(kvcache::KvEventListener* listener);
  // the tiers below the KV cache (G2, G3): G1 evictions are offloaded to
  // them and prompts onboard from them (see Scheduler). not owned; set
  // before the first request. null = none.
  void setKvTiers(kvcache::KvTierChain* tiers);
  const kvcache::KvTierChain* kvTiers() const { return tiers_; }
  // called on a tier's thread when an onboarding's reads complete, so an
  // idle caller steps again (see KvTierChain::setCompletionWakeup).
  void setOnboardWakeup(std::function<void()> wakeup);
  const Scheduler& scheduler() const { return scheduler_; }

 private:
  std::vector<TokenOutput> runStep();
  // the matcher of a request with a grammar (null without one), advanced
  // over its replayed prompt tokens.
  absl::StatusOr<std::unique_ptr<grammar::TokenMatcher>> makeMatcher(
      std::span<const int32_t> prompt, const SamplingParams& params) const;
  std::vector<TokenOutput> failStep(const Batch& batch);
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
  bool stalled_ = false;
};

}  // namespace tandem::engine
