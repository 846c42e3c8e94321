// A generation::Generator scripted per test: each submit takes the next
// FakeScript (or the default one) — refuse with a status, or emit its
// tokens, then finish, fail (kError), or hold until cancel() or finish().
// Outputs come from the fake's own thread, in order, as a real generator's
// do (never from inside submit() or cancel()). It records every submit and
// every cancel. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "generation/generator.h"

namespace tandem::testing {

struct FakeScript {
  // not ok: submit() returns it and nothing starts.
  absl::Status refuse = absl::OkStatus();
  // emitted one output each, in order.
  std::vector<int32_t> tokens;
  // the last token's finish reason (no tokens: one output with token -1).
  generation::FinishReason finish = generation::FinishReason::kLength;
  // after the tokens, a kError output (token -1) instead of finishing.
  bool fail = false;
  // after the tokens, nothing until cancel() (a kAbort output) or finish().
  bool hold = false;
  // the tokens over and over, never finishing, until cancel(): a generator
  // that produces forever (each output is queued once the last was delivered).
  bool endless = false;
  // reported on every output.
  int cached_tokens = 0;
  // every token's logprob, and its top logprobs (each token, then token+1)
  // when the request asked for them (params.logprobs > 0).
  float logprob = -0.5f;
  // (not scripted) with params.prompt_logprobs the first token carries the
  // prompt's scores: prompt token i has logprob -i/8, rank i, and as its
  // top the token itself, then token + 1, ... at -(i + k)/8.
};

class FakeGenerator : public generation::Generator {
 public:
  struct Submit {
    generation::RequestId id = 0;
    std::vector<int32_t> prompt;
    generation::SamplingParams params;
  };

  FakeGenerator();
  ~FakeGenerator() override;

  // the script of every submit that finds none queued (default: refuse
  // nothing, emit nothing, finish kLength).
  void setDefaultScript(FakeScript script);
  // the next submit's script (FIFO).
  void pushScript(FakeScript script);
  void setReady(bool ready);
  // what limits() reports; submit checks every request against them with
  // the real rule (generation::checkRequest) before its script.
  void setLimits(generation::RequestLimits limits);
  void setMaxModelLen(int len);

  // finishes a held request with `reason` (an output with token -1).
  void finish(generation::RequestId id, generation::FinishReason reason);

  // what was submitted (refused submits included, with id 0) and cancelled.
  std::vector<Submit> submits() const;
  std::vector<generation::RequestId> cancels() const;
  // waits until `condition` holds over submits and cancels; false after
  // `timeout`.
  bool waitFor(const std::function<bool(const std::vector<Submit>&,
                                        const std::vector<generation::RequestId>&)>& condition,
               std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;
  // requests whose last output was delivered.
  int finishedCount() const;
  // outputs delivered to callbacks, over all requests.
  int64_t deliveredCount() const;

  // generation::Generator
  absl::StatusOr<generation::RequestId> submit(std::vector<int32_t> prompt,
                                               generation::SamplingParams params,
                                               OutputCallback callback) override;
  void cancel(generation::RequestId id) override;
  bool ready() const override;
  generation::GeneratorLoad load() const override;
  generation::RequestLimits limits() const override;

 private:
  struct Active {
    int cached_tokens = 0;
    // endless scripts: what the next output is made of.
    std::vector<int32_t> endless_tokens;
    size_t next = 0;
    int num_prompt = 0;
    float logprob = 0;
  };
  struct Pending {
    generation::RequestId id;
    generation::TokenOutput output;
  };

  // queues `output` for request `id`; its last output ends the request. mu_ held.
  void queueLocked(generation::RequestId id, generation::TokenOutput output);
  // queues the next output of endless request `id`. mu_ held.
  void queueEndlessLocked(generation::RequestId id);
  void run();

  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  FakeScript default_script_;
  std::deque<FakeScript> scripts_;
  bool ready_ = true;
  generation::RequestLimits limits_;
  generation::RequestId next_id_ = 1;
  std::vector<Submit> submits_;
  std::vector<generation::RequestId> cancels_;
  std::map<generation::RequestId, Active> active_;  // not yet given their last output
  std::deque<Pending> outputs_;                     // for run() to deliver
  std::map<generation::RequestId, OutputCallback> callbacks_;
  int finished_ = 0;
  int64_t delivered_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace tandem::testing
