// Runs an Engine on a thread of its own so that a server can feed it from
// any thread: submit() and cancel() queue work, the loop steps the engine
// while it has requests (sleeping otherwise) and hands each request's tokens
// to that request's callback, on the loop thread, in order.
//
// Every submitted request gets exactly one final output (finished() true):
// its last token, or, when cancelled or failed, an output with token -1 and
// finish reason kAbort or kError. After it, the callback is released.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "generation/request_limits.h"
#include "kvcache/kv_event_log.h"
#include "server/engine/engine_assembly.h"

namespace tandem::engine {

// a snapshot of the loop's load, updated after every step.
struct EngineLoopStats {
  int num_running = 0;
  int num_waiting = 0;
  int num_blocks = 0;
  int num_free_blocks = 0;
  uint64_t num_steps = 0;
  // prompt tokens of requests not yet fully prefilled (here).
  int64_t num_prefill_tokens_queued = 0;
  // decode side: requests whose prompt KV is being written from outside.
  int num_awaiting_kv = 0;
  // prefill side: finished prefills whose blocks are still held.
  int num_held_prefills = 0;
  // requests waiting for prompt blocks to come back from a lower KV tier.
  int num_onboarding = 0;
  // prompt tokens brought back from the lower KV tiers, since start.
  int64_t num_onboarded_tokens = 0;
};

class EngineLoop {
 public:
  // called on the loop thread; must not block (queue work elsewhere).
  using OutputCallback = std::function<void(const TokenOutput&)>;

  // takes the engine and starts the loop thread.
  explicit EngineLoop(EngineAssemblyPtr engine);
  // stops the loop: unfinished requests end with kAbort.
  ~EngineLoop();

  // queues a request under `id` (unique among unfinished requests). The
  // request must pass generation::checkRequest against limits() (the
  // caller checks; the loop asserts it). fails at once, queuing nothing and
  // never calling `callback`, with InvalidArgument for a grammar the engine
  // cannot compile (Engine::checkGrammar), FailedPrecondition after stop().
  absl::Status submit(SeqId id, std::vector<int32_t> prompt, SamplingParams params,
                      OutputCallback callback);
  // cancels a request: its callback then gets the kAbort final output
  // (unless it finished first). unknown ids are ignored. Works for every
  // kind of request below too (a held prefill's blocks are freed).
  void cancel(SeqId id);

  // ---- disaggregation: the prefill worker's side (P) ----

  // prefills `prompt` and samples its first token with `params`
  // (max_tokens is ignored: one token). after each step that computed more
  // of the prompt, `on_progress` gets the tokens computed so far and the
  // request's block table: block i holds positions [i*B, (i+1)*B); blocks
  // fully below num_computed_tokens never change again, so a sender may
  // push them at once (the block holding the last prompt token is complete
  // only once on_done ran). `on_done` then gets the first token (finished()
  // true) or token -1 with kAbort/kError. after a successful on_done the
  // request's blocks stay allocated and unchanged until releasePrefill(id)
  // (or cancel(id)). both run on the loop thread and must not block.
  // errors as submit().
  // releasePrefill(id) or cancel(id) before on_done cancels the prefill
  // (on_done then gets kAbort). a prefill reserves blocks for its whole
  // prompt when it starts and is never preempted, so the block table
  // on_progress reports is the same every time.
  struct PrefillCallbacks {
    std::function<void(int num_computed_tokens, std::span<const int32_t> block_table)>
        on_progress;
    OutputCallback on_done;
  };
  absl::Status submitPrefill(SeqId id, std::vector<int32_t> prompt, SamplingParams params,
                             PrefillCallbacks callbacks);
  // frees the blocks a finished prefill holds. unknown ids are ignored.
  void releasePrefill(SeqId id);

  // ---- disaggregation: the decode worker's side (D) ----

  // where a remote prefill must write a request's prompt KV.
  struct KvAllocation {
    // leading prompt tokens found in this worker's prefix cache (a multiple
    // of the block size): their blocks need not be sent.
    int num_cached_tokens = 0;
    // the blocks of the whole prompt, block i holding positions
    // [i*B, (i+1)*B); the last may be partial.
    std::vector<int32_t> block_ids;
  };
  // admits a request whose prompt KV will arrive from outside: it holds
  // blocks for the whole prompt and is not scheduled until
  // completeRemotePrefill or failRemotePrefill. waits for the loop thread
  // (between steps). ResourceExhausted when the blocks are not free now (the
  // caller then uses submit(), which queues); otherwise errors as submit(),
  // and AlreadyExists for an id in use. may be called from any thread,
  // including the loop thread (from a callback: it then runs at once).
  absl::StatusOr<KvAllocation> submitAwaitingKv(SeqId id, std::vector<int32_t> prompt,
                                                SamplingParams params, OutputCallback callback);
  // the prompt's KV is in the blocks and `first` (token, logprob,
  // top_logprobs) is its first token, sampled by P: the request commits its
  // full prompt blocks to the prefix cache, delivers `first` to its callback
  // as its first output (finishing it when it is a stop token or max_tokens
  // is 1) and decodes on. unknown ids, and ids no longer awaiting KV, are
  // ignored. a first token outside the vocabulary, or one the request's
  // grammar refuses, is treated as failRemotePrefill(id).
  void completeRemotePrefill(SeqId id, TokenOutput first);
  // the remote prefill failed: the blocks written from outside are dropped
  // unused and the request prefills locally (its prefix-cache hits stay).
  // unknown ids are ignored.
  void failRemotePrefill(SeqId id);

  EngineLoopStats stats() const;
  // the counters of the KV tiers below the pool (empty when none); any thread.
  std::vector<kvcache::KvTierStats> kvTierStats() const;
  int maxModelLen() const { return engine_->maxModelLen(); }
  // what a request may ask of this engine (its context, vocabulary and
  // cache); submissions must pass generation::checkRequest against it.
  const generation::RequestLimits& limits() const { return limits_; }
  int vocabSize() const { return vocab_size_; }
  const EngineAssembly& localEngine() const { return *engine_; }
  // the KV cache's events, numbered (the worker streams them to the router).
  kvcache::KvEventLog& kvEvents() { return kv_events_; }

  // ends every unfinished request with kAbort, frees held prefills, wakes
  // kvEvents() readers for good and joins the thread. idempotent.
  void stop();

 private:
  using Task = std::function<void()>;
  using ProgressCallback = std::function<void(int, std::span<const int32_t>)>;
  // a prefill (P side) whose progress is still reported.
  struct PrefillProgress {
    ProgressCallback on_progress;
    int num_prompt_tokens = 0;
    int reported = 0;
  };

  // asserts the limits, then Engine::checkGrammar (see submit()).
  absl::Status checkSubmission(const std::vector<int32_t>& prompt,
                               const SamplingParams& params) const;
  // queues `task` for the loop thread, in call order with every other task.
  // FailedPrecondition after stop().
  absl::Status post(Task task);

  void run();
  // the tasks below run on the loop thread, between steps.
  void admit(SeqId id, std::vector<int32_t> prompt, SamplingParams params,
             OutputCallback callback, bool hold_blocks_on_finish);
  absl::StatusOr<KvAllocation> admitAwaitingKv(SeqId id, std::vector<int32_t> prompt,
                                               SamplingParams params, OutputCallback callback);
  void cancelNow(SeqId id);
  // calls on_progress for every prefill that advanced in the last step.
  void reportProgress();
  void deliver(const TokenOutput& output);
  void finishWith(SeqId id, FinishReason reason);
  void publishStats();

  EngineAssemblyPtr engine_;
  const int vocab_size_;
  const generation::RequestLimits limits_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::vector<Task> tasks_;  // guarded by mu_
  bool stopping_ = false;    // guarded by mu_
  EngineLoopStats stats_;    // guarded by mu_

  kvcache::KvEventLog kv_events_;

  // owned by the loop thread.
  std::unordered_map<SeqId, OutputCallback> callbacks_;
  std::unordered_map<SeqId, PrefillProgress> prefills_;
  std::thread thread_;
  // thread_'s id, set once in the constructor.
  std::thread::id loop_id_;
};

}  // namespace tandem::engine
