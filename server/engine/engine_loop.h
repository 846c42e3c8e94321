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
#include "server/engine/held_prefill_connector.h"
#include "server/engine/remote_prefill_connector.h"

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
  // decode side: requests whose prompt KV a prefill worker is writing.
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
  using OutputCallback = std::function<void(const generation::TokenOutput&)>;

  // takes the engine and starts the loop thread.
  explicit EngineLoop(EngineAssemblyPtr engine);
  // stops the loop: unfinished requests end with kAbort.
  ~EngineLoop();

  // queues a request under `id` (unique among unfinished requests). The
  // request must pass generation::checkRequest against limits() (the
  // caller checks; the loop asserts it). `kv_source` is one of this loop's
  // connectors (remotePrefill(), heldPrefills()) or null: where the
  // request's prompt KV comes from, or that its blocks outlive it. fails at
  // once, queuing nothing and never calling `callback`, with
  // InvalidArgument for a grammar the engine cannot compile
  // (Engine::checkGrammar), FailedPrecondition after stop().
  absl::Status submit(generation::SeqId id, std::vector<int32_t> prompt,
                      generation::SamplingParams params, OutputCallback callback,
                      KvConnector* kv_source = nullptr);
  // cancels a request: its callback then gets the kAbort final output
  // (unless it finished first); a finished request whose blocks are held
  // frees them. unknown ids are ignored.
  void cancel(generation::SeqId id);

  // disaggregation, the decode worker's side: requests whose prompt KV a
  // prefill worker writes (server/engine/remote_prefill_connector.h).
  RemotePrefillConnector& remotePrefill() { return remote_prefill_; }
  // disaggregation, the prefill worker's side: prefills whose blocks stay
  // until their KV was sent (server/engine/held_prefill_connector.h).
  HeldPrefillConnector& heldPrefills() { return held_prefills_; }

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

  // ends every unfinished request with kAbort, frees held blocks, wakes
  // kvEvents() readers for good and joins the thread. idempotent.
  void stop();

 private:
  using Task = std::function<void()>;

  // asserts the limits, then Engine::checkGrammar (see submit()).
  absl::Status checkSubmission(const std::vector<int32_t>& prompt,
                               const generation::SamplingParams& params) const;
  // queues `task` for the loop thread, in call order with every other task.
  // FailedPrecondition after stop().
  absl::Status post(Task task);

  void run();
  // the tasks below run on the loop thread, between steps.
  void admit(generation::SeqId id, std::vector<int32_t> prompt, generation::SamplingParams params,
             OutputCallback callback, KvConnector* kv_source);
  void cancelNow(generation::SeqId id);
  void deliver(const generation::TokenOutput& output);
  void finishWith(generation::SeqId id, generation::FinishReason reason);
  void publishStats();

  EngineAssemblyPtr engine_;
  const int vocab_size_;
  RemotePrefillConnector remote_prefill_;
  HeldPrefillConnector held_prefills_;
  const generation::RequestLimits limits_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::vector<Task> tasks_;  // guarded by mu_
  bool stopping_ = false;    // guarded by mu_
  EngineLoopStats stats_;    // guarded by mu_

  kvcache::KvEventLog kv_events_;

  // owned by the loop thread.
  std::unordered_map<generation::SeqId, OutputCallback> callbacks_;
  std::thread thread_;
};

}  // namespace tandem::engine
