// One request the RemoteGenerator generates on decode workers, in flight:
// the original prompt and parameters, the tokens delivered to the client so
// far, and its GenerateAttempt in flight (one Worker.Generate call, a gRPC
// callback reactor). When that call ends before its final message the request goes back to the generator,
// which resubmits prompt ‖ delivered tokens for the remaining max_tokens to
// another decode worker (migration): the client sees each token once.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "generation/generator.h"
#include "grpcpp/grpcpp.h"
#include "tandem/v1/worker.grpc.pb.h"

namespace tandem::router::cluster {

class RemoteGenerator;
class GenerateAttempt;

class RemoteRequest : public std::enable_shared_from_this<RemoteRequest> {
 public:
  using Clock = std::chrono::steady_clock;

  RemoteRequest(RemoteGenerator* generator, generation::RequestId id, std::vector<int32_t> prompt,
                generation::SamplingParams params, generation::Generator::OutputCallback callback);

  generation::RequestId id() const { return id_; }

  // what the next attempt sends: the prompt followed by the tokens already
  // delivered, and the tokens still to generate (mu_ not held; only while
  // no call is in flight).
  std::vector<int32_t> nextPrompt() const;
  int remainingTokens() const;
  const generation::SamplingParams& params() const { return params_; }
  // the next attempt scores the prompt: it asks for prompt logprobs and no
  // token reached the client yet (the scores come with the first).
  bool scoresPrompt() const { return params_.prompt_logprobs.has_value() && delivered_.empty(); }

  // starts Worker.Generate on `stub` (D at `address`, with P at
  // `prefill_address` or "" for a local prefill). false when the request
  // was cancelled meanwhile (nothing started).
  bool startCall(tandem::v1::Worker::Stub* stub, const std::string& address,
                 const std::string& prefill_address, const std::string& wire_id);
  // the client's cancel: the call in flight is cancelled (its worker frees
  // the request's blocks). returns true when no call is in flight and the
  // request is not finished: the caller must then finish it with kAbort
  // (on a thread where calling back is allowed).
  bool cancel();
  // the router gave up on the call's worker (unhealthy): cancels the call
  // so that the request migrates.
  void abandonIfOn(const std::string& address);
  // the decode worker the call in flight runs on ("" = none).
  std::string currentAddress() const;
  bool cancelled() const;

  // delivers the final output with `reason` (token -1) unless one was
  // delivered. only while no call is in flight.
  void finish(generation::FinishReason reason);

  // the worker call's reactions.
  void onMessage(const tandem::v1::WorkerGenerateResponse& msg, bool first);
  void onCallDone(const grpc::Status& status);

  // set by the generator: when, with no decode worker, the request fails.
  Clock::time_point wait_deadline;
  // decode workers that failed this request (avoided when others exist).
  std::vector<std::string> failed_on;
  int attempts = 0;
  // the current attempt's key in the route planner's load model.
  uint64_t route_key = 0;

 private:
  RemoteGenerator* generator_;
  const generation::RequestId id_;
  const std::vector<int32_t> prompt_;
  const generation::SamplingParams params_;
  generation::Generator::OutputCallback callback_;

  mutable std::mutex mu_;
  GenerateAttempt* call_ = nullptr;     // guarded by mu_
  std::string address_;                 // the call's worker; guarded by mu_
  bool cancelled_ = false;              // by the client; guarded by mu_
  bool abandoned_ = false;              // by the router; guarded by mu_
  bool final_delivered_ = false;        // guarded by mu_
  // delivered tokens; written only by the call's reactions or while idle.
  std::vector<int32_t> delivered_;
  // the prompt's scores the attempt sent so far (before its first token;
  // another attempt starts them again).
  std::vector<generation::PromptTokenLogprob> prompt_logprobs_;
  int cached_tokens_ = 0;
  // the worker sent "abort"/"error" we did not ask for: migrate.
  bool worker_gave_up_ = false;
};

using RemoteRequestPtr = std::shared_ptr<RemoteRequest>;

}  // namespace tandem::router::cluster
