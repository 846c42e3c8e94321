// Continuous batching with chunked prefill (as vLLM v1's scheduler), over a
// KvCacheManager and independent of the model.
//
// Each step shares a token budget (max_num_batched_tokens) between:
//   1. running decodes, one token each, in admission order;
//   2. running prefills still in progress, up to chunk_size tokens each;
//   3. waiting requests, first come first served, while sequences, budget
//      and KV blocks last. cached prompt prefix tokens cost nothing.
// A request scoring its prompt (prompt_logprobs) computes it whole (no
// prefix-cache hits, no onboarding), its chunks asking for every token's
// logits, at most max_prompt_logprob_rows of them a step in all.
// When the cache runs out of blocks for a running sequence, the most
// recently admitted running sequence is preempted by recompute: its blocks
// are freed and it goes back to the front of the waiting queue, to prefill
// its prompt and output so far again later. So no request fails because the
// cache is full; one that cannot fit even alone is refused by addRequest.
//
// Usage per step: batch = schedule(); run the model on it; sample one token
// for each chunk with needs_logits; onStepResult(tokens).
//
// Disaggregated serving adds two kinds of request:
//   - a held prefill (prefill worker): addRequest with
//     hold_blocks_on_finish. It reserves its whole prompt's blocks when
//     admitted, is never preempted, and when it finishes its blocks stay
//     allocated ("held") until releaseHeld, so a sender can copy them out.
//   - an awaiting-KV request (decode worker): admitAwaitingKv gives it
//     blocks for its whole prompt at once; it is not scheduled until
//     completeRemotePrefill (the KV arrived: it joins running and decodes)
//     or failRemotePrefill (its blocks are dropped and it prefills locally).
//
// With tiers below the KV cache (G2 host, G3 disk), a waiting request's
// prompt blocks found there are onboarded before it is admitted: G2 hits
// are copied back at once; G3 hits are read asynchronously while the
// request waits aside (kOnboarding) and the other requests keep stepping;
// when the reads complete it goes back to the front of the waiting queue and
// hits those blocks in the prefix cache (onboarded tokens count as cached).
// Every call below happens between steps (never between schedule and
// onStepResult) unless it says otherwise.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "generation/sampling_params.h"
#include "kvcache/kv_cache_manager.h"
#include "server/engine/batch.h"
#include "server/engine/request.h"
#include "server/engine/sampler_rng.h"

namespace tandem::engine {

struct SchedulerConfig {
  // most sequences in one batch.
  int max_num_seqs = 256;
  // most tokens computed in one step, decodes and prefill chunks together.
  int max_num_batched_tokens = 2048;
  // most prompt tokens of one request computed in one step.
  int chunk_size = 512;
  // the model's context length: prompt plus output never exceed it.
  int max_model_len = 4096;
  // tokens that end generation unless a request sets ignore_eos.
  std::vector<int32_t> eos_token_ids;
  // most prompt tokens scored in one step (SamplingParams::prompt_logprobs),
  // over every request scoring its prompt: each costs a vocab-sized row of
  // logits, so this bounds the step's logits (EngineAssembly sizes it from
  // the vocabulary). A scoring request's chunks are cut to what is left.
  int max_prompt_logprob_rows = 512;
};

// what one step did to one request.
struct RequestOutput {
  SeqId id = 0;
  // the token sampled this step, now the request's last output token.
  int32_t token = 0;
  FinishReason finish_reason = FinishReason::kNone;
  int num_prompt_tokens = 0;
  int num_output_tokens = 0;
  int num_cached_tokens = 0;

  bool finished() const { return finish_reason != FinishReason::kNone; }
};

class Scheduler {
 public:
  // `kv` is not owned and must outlive the scheduler; the scheduler is its
  // only user. config values must be positive.
  Scheduler(SchedulerConfig config, kvcache::KvCacheManager& kv);

  // queues a request. fails, queuing nothing, with AlreadyExists for an id
  // in use (live or held). The request must be within the limits the
  // engine reports (generation::checkRequest passed: valid params, a
  // prompt with room left in max_model_len, prompt plus max_tokens within
  // the whole cache); the scheduler asserts that (TANDEM_CHECK).
  // with hold_blocks_on_finish the request is a held prefill (see above).
  absl::Status addRequest(SeqId id, std::vector<int32_t> prompt, SamplingParams params,
                          bool hold_blocks_on_finish = false);

  // admits a request whose prompt KV another worker computes: it takes its
  // prefix-cache hits and blocks for the rest of the prompt now and returns
  // the number of prompt tokens found cached (its blocks: blockTable(id) of
  // the KV cache). fails, changing nothing, as addRequest, and with
  // ResourceExhausted when the blocks are not free now, InvalidArgument for
  // a request scoring its prompt (prefilled where its logits are).
  absl::StatusOr<int> admitAwaitingKv(SeqId id, std::vector<int32_t> prompt,
                                      SamplingParams params);
  // the awaiting request's prompt KV is in its blocks and `first_token` is
  // its first output token: commits its full prompt blocks to the prefix
  // cache, appends the token and applies the stop checks; the request then
  // finishes (freeing its blocks) or joins running to decode. returns its
  // output. NotFound when `id` is not awaiting KV.
  absl::StatusOr<RequestOutput> completeRemotePrefill(SeqId id, int32_t first_token);
  // the awaiting request's remote prefill failed: frees its blocks without
  // committing any (their contents are never used), resets it and puts it
  // at the front of the waiting queue to prefill locally. NotFound when `id`
  // is not awaiting KV.
  absl::Status failRemotePrefill(SeqId id);

  // frees the blocks of a held prefill. false (nothing done) when `id` is
  // not held.
  bool releaseHeld(SeqId id);
  bool isHeld(SeqId id) const { return held_.contains(id); }

  // cancels a waiting, running or awaiting-KV request and frees its blocks. when it is
  // in the step in flight, onStepResult skips its row. NotFound when unknown
  // or already finished (a held prefill is finished: see releaseHeld).
  absl::Status abort(SeqId id);

  // the next step's batch (empty when nothing can run). the previous
  // batch's onStepResult must have been called.
  Batch schedule();

  // takes the sampled tokens for the last batch's needs_logits chunks, in order,
  // appends them, commits newly full blocks to the prefix cache, finishes
  // requests that stopped (freeing their blocks) and returns one output per
  // sampled token of a live request, in row order.
  std::vector<RequestOutput> onStepResult(std::span<const int32_t> sampled);

  // the live request, or null. the engine reads its params, tokens and rng
  // to sample its logit row.
  Request* findRequest(SeqId id);
  const Request* findRequest(SeqId id) const;
  // how many tokens `req` may still generate before checkStop ends it for
  // length (max_tokens or the context, whichever comes first), the next
  // one included.
  int64_t tokensLeft(const Request& req) const {
    return std::min<int64_t>(req.params.max_tokens - req.numOutputTokens(),
                             config_.max_model_len - req.numTokens());
  }

  int numWaiting() const { return static_cast<int>(waiting_.size()); }
  int numRunning() const { return static_cast<int>(running_.size()); }
  int numAwaitingKv() const { return num_awaiting_kv_; }
  int numHeld() const { return static_cast<int>(held_.size()); }
  // requests waiting for their prompt blocks to come back from a lower tier.
  int numOnboarding() const { return static_cast<int>(onboarding_.size()); }
  // live requests in any state, awaiting KV included.
  bool hasUnfinished() const { return !requests_.empty(); }
  // requests that schedule() may compute: waiting or running ones.
  bool hasSchedulable() const { return !waiting_.empty() || !running_.empty(); }
  int64_t numPreemptions() const { return num_preemptions_; }
  // tokens (prompt, or prompt and output after a preemption) that waiting
  // and running requests still have to prefill (awaiting-KV ones excluded).
  int64_t numPrefillTokensQueued() const;

 private:
  struct Scheduled {
    SeqId id;
    int num_new_tokens;
    bool needs_logits;
    // every token's logits: the chunk scores prompt tokens.
    bool all_logits = false;
    // aborted while in flight: its row is skipped.
    bool dropped = false;
  };

  // aborts unless a request of `prompt_len` tokens with `params` is within
  // the limits (see addRequest).
  void assertFits(int64_t prompt_len, const SamplingParams& params) const;
  // whether `req`'s chunk of n tokens from its num_computed_tokens scores
  // prompt tokens not scored yet.
  static bool chunkScoresPrompt(const Request& req, int n);
  // most tokens of `req`'s next chunk by the step's scoring rows left
  // (max_new unchanged for a request not scoring its prompt).
  int capByScoringRows(const Request& req, int max_new) const;
  // records a chunk for the step's batch.
  void addScheduled(const Request& req, int n, bool needs_logits, int& budget);

  // schedules up to `max_new` tokens of a running request, preempting from
  // the back of running_ until its slots fit. false when it was preempted.
  bool scheduleRunning(Request& req, int max_new, int& budget);
  void preempt(Request& victim, int& budget);
  // the most recently admitted running request that may be preempted (not a
  // held prefill); null when none.
  Request* preemptionVictim() const;
  // the request awaiting KV under `id`, or null.
  Request* findAwaiting(SeqId id);
  // admits waiting requests while sequences, budget and blocks last.
  void admitWaiting(int& budget);
  // onboarding requests whose blocks came back rejoin the waiting queue's front.
  void resumeOnboarded();
  // searches the lower tiers for req's prompt blocks (once per admission);
  // true when req now waits aside for them.
  bool startOnboarding(Request& req);
  void finish(Request& req, FinishReason reason);
  FinishReason checkStop(const Request& req, int32_t token) const;
  Batch buildBatch() const;

  const SchedulerConfig config_;
  kvcache::KvCacheManager& kv_;
  absl::flat_hash_map<SeqId, std::unique_ptr<Request>> requests_;
  std::deque<Request*> waiting_;
  // admission order: the back is the next preemption victim.
  std::vector<Request*> running_;
  // held prefills: finished, their blocks still allocated under their id.
  absl::flat_hash_set<SeqId> held_;
  int num_awaiting_kv_ = 0;
  // onboarding ticket -> request waiting for it.
  absl::flat_hash_map<uint64_t, Request*> onboarding_;
  std::vector<Scheduled> scheduled_;
  // rows of prompt logits this step may still ask for.
  int scoring_rows_left_ = 0;
  bool step_in_flight_ = false;
  int64_t num_preemptions_ = 0;
  // seeds requests that bring no seed of their own.
  SamplerRng seed_source_;
};

}  // namespace tandem::engine
