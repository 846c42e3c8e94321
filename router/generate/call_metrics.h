// The serving metrics one call records, the same for an OpenAI
// CompletionCall and a gRPC Generate call: in flight from construction
// until end(), time to first token (the call's first), inter-token latency
// (within each choice), end-to-end latency and token counts (each prompt
// in its prompt-length range) when it completes, and its endpoint and
// status when it ends. Not thread-safe: the call's own lock guards it.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "router/generate/request_record.h"
#include "router/metrics/serving_metrics.h"

namespace tandem::router {

class CallMetrics {
 public:
  using Clock = std::chrono::steady_clock;

  // the token clock of one choice.
  struct ChoiceTiming {
    Clock::time_point last_token;
    int tokens = 0;  // tokens the choice generated so far
  };

  // counts the call in flight. `metrics` outlives the call. `record` (may
  // be null) is the request's access-log record: it learns the first
  // token's time, the tokens and the call's status from here.
  CallMetrics(ServingMetrics* metrics, Clock::time_point arrival, RequestRecordPtr record = nullptr);

  Clock::time_point arrival() const { return arrival_; }
  // a choice, its clock started at the call's arrival.
  ChoiceTiming startChoice() const { return ChoiceTiming{arrival_, 0}; }

  // one token of `choice` arrived now: the call's first records time to
  // first token, a choice's later ones the time since its previous one.
  void tokenArrived(ChoiceTiming& choice);
  // the tokens of one prompt of a call: its length, those of it the worker
  // found in its prefix cache, and those its choices generated. A prompt of
  // n choices counts once, as its usage does (its first choice's cache hit,
  // the choices' tokens summed): one entry of the prompt-length mix per
  // prompt, so a call of one prompt is one there as in requests_total.
  struct PromptTokens {
    int prompt = 0;
    int cached = 0;
    int generated = 0;
  };
  // the call generated everything: end-to-end latency and, per prompt, the
  // token counts (ServingMetrics::countPrompt).
  void completed(const std::vector<PromptTokens>& prompts);
  // the call is answered with `status` (HTTP status or gRPC code) on
  // `endpoint`; it is no longer in flight. Later calls do nothing.
  void end(const std::string& endpoint, int status);

 private:
  ServingMetrics* const metrics_;
  const Clock::time_point arrival_;
  const RequestRecordPtr record_;
  bool first_token_seen_ = false;
  bool ended_ = false;
};

}  // namespace tandem::router
