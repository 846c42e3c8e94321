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
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "server/engine/local_engine.h"

namespace tandem::engine {

// a snapshot of the loop's load, updated after every step.
struct EngineLoopStats {
  int num_running = 0;
  int num_waiting = 0;
  int num_blocks = 0;
  int num_free_blocks = 0;
  uint64_t num_steps = 0;
  // prompt tokens of requests not yet fully prefilled.
  int64_t num_prefill_tokens_queued = 0;
};

class EngineLoop {
 public:
  // called on the loop thread; must not block (queue work elsewhere).
  using OutputCallback = std::function<void(const EngineOutput&)>;

  // takes the engine and starts the loop thread.
  explicit EngineLoop(LocalEnginePtr engine);
  // stops the loop: unfinished requests end with kAbort.
  ~EngineLoop();

  // queues a request under `id` (unique among unfinished requests). fails at
  // once, queuing nothing and never calling `callback`, with
  // InvalidArgument when the engine would refuse it (Engine::checkRequest)
  // or a prompt token is outside the vocabulary, FailedPrecondition after
  // stop().
  absl::Status submit(SeqId id, std::vector<int32_t> prompt, SamplingParams params,
                      OutputCallback callback);
  // cancels a request: its callback then gets the kAbort final output
  // (unless it finished first). unknown ids are ignored.
  void cancel(SeqId id);

  EngineLoopStats stats() const;
  int maxModelLen() const { return engine_->maxModelLen(); }
  int vocabSize() const { return vocab_size_; }
  const LocalEngine& localEngine() const { return *engine_; }

  // ends every unfinished request with kAbort and joins the thread.
  // idempotent.
  void stop();

 private:
  struct Submission {
    SeqId id;
    std::vector<int32_t> prompt;
    SamplingParams params;
    OutputCallback callback;
  };

  void run();
  // moves the queued submissions and cancellations into the engine.
  void admit(std::vector<Submission>& submissions, std::vector<SeqId>& cancels);
  void deliver(const EngineOutput& output);
  void finishWith(SeqId id, FinishReason reason);
  void publishStats();

  LocalEnginePtr engine_;
  const int vocab_size_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::vector<Submission> submissions_;  // guarded by mu_
  std::vector<SeqId> cancels_;           // guarded by mu_
  bool stopping_ = false;                // guarded by mu_
  EngineLoopStats stats_;                // guarded by mu_

  // owned by the loop thread.
  std::unordered_map<SeqId, OutputCallback> callbacks_;
  std::thread thread_;
};

}  // namespace tandem::engine
