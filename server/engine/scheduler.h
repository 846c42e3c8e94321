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
// A request's prompt KV may also come from elsewhere, and its blocks may
// outlive it: the scheduler asks its KvConnectors at fixed points
// (server/engine/kv_connector.h) — at admission, how many prompt tokens
// after the prefix-cache hits a connector supplies (every-request ones
// first: the host/disk tiers; then the request's own source: a remote
// prefill); the request then holds blocks for them and, when they land
// later, waits aside in the one state kWaitingForKv while the others keep
// stepping. When they land: a whole prompt with its first token (remote
// prefill) joins running and decodes on; otherwise the KV that landed is
// committed to the prefix cache and the request goes back to the front of
// the waiting queue, where it hits those blocks (and computes the rest). A
// request of a connector that holdsBlocks() (a prefill served for another
// worker) reserves its whole prompt's blocks when admitted, is never
// preempted, and when it finishes its blocks stay ("held") until its
// connector releases them.
// Every call below happens between steps (never between schedule and
// onStepResult) unless it says otherwise.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "generation/sampling_params.h"
#include "kvcache/kv_cache_manager.h"
#include "server/engine/batch.h"
#include "server/engine/kv_connector.h"
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
  // most prompt tokens scored in one step (generation::SamplingParams::prompt_logprobs),
  // over every request scoring its prompt: each costs a vocab-sized row of
  // logits, so this bounds the step's logits (EngineAssembly sizes it from
  // the vocabulary). A scoring request's chunks are cut to what is left.
  int max_prompt_logprob_rows = 512;
};

// what one step did to one request.
struct RequestOutput {
  generation::SeqId id = 0;
  // the token sampled this step, now the request's last output token.
  int32_t token = 0;
  generation::FinishReason finish_reason = generation::FinishReason::kNone;
  int num_prompt_tokens = 0;
  int num_output_tokens = 0;
  int num_cached_tokens = 0;

  bool finished() const { return finish_reason != generation::FinishReason::kNone; }
};

class Scheduler {
 public:
  // `kv` is not owned and must outlive the scheduler; the scheduler is its
  // only user. config values must be positive.
  Scheduler(SchedulerConfig config, kvcache::KvCacheManager& kv);

  // the connectors requests may use (not owned; each must outlive the
  // scheduler). Before the first request.
  void addConnector(KvConnector* connector) { connectors_.push_back(connector); }
  const std::vector<KvConnector*>& connectors() const { return connectors_; }

  // queues a request. fails, queuing nothing, with AlreadyExists for an id
  // in use (live or held). The request must be within the limits the
  // engine reports (generation::checkRequest passed: valid params, a
  // prompt with room left in max_model_len, prompt plus max_tokens within
  // the whole cache); the scheduler asserts that (TANDEM_CHECK).
  // `kv_source` (one of connectors(), or null) is the request's own
  // connector (see above).
  absl::Status addRequest(generation::SeqId id, std::vector<int32_t> prompt, generation::SamplingParams params,
                          KvConnector* kv_source = nullptr);

  // what a connector reported for a request waiting for it (`landed.id`
  // is kWaitingForKv on `from`; the engine checked): with a first token,
  // the request commits its prompt blocks, appends the token, applies the
  // stop checks and decodes on (its output is returned); otherwise what
  // landed is committed and the request waits again at the front.
  std::optional<RequestOutput> land(const KvConnector* from, const KvConnector::Landed& landed);
  // frees the blocks of a held request, first caching the full blocks of
  // its tokens computed when it finished plus `released.num_tokens` more
  // that landed since. false (nothing done) when it is not held.
  bool releaseHeld(const KvConnector::Landed& released);
  bool isHeld(generation::SeqId id) const { return held_.contains(id); }
  std::vector<generation::SeqId> heldIds() const;

  // cancels a waiting, running or kWaitingForKv request and frees its
  // blocks (unless a connector holds them: see finished()), or frees a held
  // one's. when it is in the step in flight, onStepResult skips its row.
  // NotFound when unknown or already finished.
  absl::Status abort(generation::SeqId id);

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
  Request* findRequest(generation::SeqId id);
  const Request* findRequest(generation::SeqId id) const;
  // how many tokens `req` may still generate before checkStop ends it for
  // length (max_tokens or the context, whichever comes first), the next
  // one included.
  int64_t tokensLeft(const Request& req) const {
    return std::min<int64_t>(req.params.max_tokens - req.numOutputTokens(),
                             config_.max_model_len - req.numTokens());
  }

  int numWaiting() const { return static_cast<int>(waiting_.size()); }
  int numRunning() const { return static_cast<int>(running_.size()); }
  int numHeld() const { return static_cast<int>(held_.size()); }
  // requests waiting for a connector (kWaitingForKv).
  int numWaitingForKv() const { return num_waiting_for_kv_; }
  // live requests in any state, kWaitingForKv included.
  bool hasUnfinished() const { return !requests_.empty(); }
  // requests that schedule() may compute: waiting or running ones.
  bool hasSchedulable() const { return !waiting_.empty() || !running_.empty(); }
  int64_t numPreemptions() const { return num_preemptions_; }
  // tokens (prompt, or prompt and output after a preemption) that waiting
  // and running requests still have to prefill (kWaitingForKv ones excluded).
  int64_t numPrefillTokensQueued() const;

 private:
  struct Scheduled {
    generation::SeqId id;
    int num_new_tokens;
    bool needs_logits;
    // every token's logits: the chunk scores prompt tokens.
    bool all_logits = false;
    // aborted while in flight: its row is skipped.
    bool dropped = false;
  };

  // aborts unless a request of `prompt_len` tokens with `params` is within
  // the limits (see addRequest).
  void assertFits(int64_t prompt_len, const generation::SamplingParams& params) const;
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
  // admits waiting requests while sequences, budget and blocks last.
  void admitWaiting(int& budget);
  // asks the connectors for `req`'s prompt KV after its `computed` prefix
  // hits (the front of waiting_): the tokens whose KV it holds now, or
  // nullopt when it left the queue to wait for KV (kWaitingForKv).
  std::optional<int> matchExternal(Request& req, int computed);
  void finish(Request& req, generation::FinishReason reason);
  generation::FinishReason checkStop(const Request& req, int32_t token) const;
  Batch buildBatch() const;

  const SchedulerConfig config_;
  kvcache::KvCacheManager& kv_;
  absl::flat_hash_map<generation::SeqId, std::unique_ptr<Request>> requests_;
  std::deque<Request*> waiting_;
  // admission order: the back is the next preemption victim.
  std::vector<Request*> running_;
  // a finished request whose blocks a connector holds: its tokens and how
  // many of them had KV when it finished.
  struct Held {
    std::vector<int32_t> tokens;
    int num_computed_tokens = 0;
  };
  absl::flat_hash_map<generation::SeqId, Held> held_;
  int num_waiting_for_kv_ = 0;
  std::vector<KvConnector*> connectors_;
  std::vector<Scheduled> scheduled_;
  // rows of prompt logits this step may still ask for.
  int scoring_rows_left_ = 0;
  bool step_in_flight_ = false;
  int64_t num_preemptions_ = 0;
  // seeds requests that bring no seed of their own.
  SamplerRng seed_source_;
};

}  // namespace tandem::engine
