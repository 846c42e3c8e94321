#include "router/cluster/remote_request.h"

#include <algorithm>

#include "proto/convert/finish_reason_proto.h"
#include "proto/convert/prompt_logprobs_proto.h"
#include "proto/convert/sampling_params_proto.h"
#include "router/cluster/remote_generator.h"

namespace tandem::router::cluster {

// one attempt: Worker.Generate on one decode worker; deletes itself when done.
class GenerateAttempt : public grpc::ClientReadReactor<tandem::v1::WorkerGenerateResponse> {
 public:
  GenerateAttempt(std::shared_ptr<RemoteRequest> request, tandem::v1::WorkerGenerateRequest wire)
      : request_(std::move(request)), wire_(std::move(wire)) {}

  void start(tandem::v1::Worker::Stub* stub) {
    stub->async()->Generate(&context_, &wire_, this);
    StartRead(&response_);
    StartCall();
  }
  void tryCancel() { context_.TryCancel(); }

  // grpc::ClientReadReactor
  void OnReadDone(bool ok) override {
    if (!ok) return;  // the stream ended: OnDone follows
    request_->onMessage(response_, first_);
    first_ = false;
    if (response_.finish_reason() != tandem::v1::FINISH_REASON_NONE) return;
    StartRead(&response_);
  }
  void OnDone(const grpc::Status& status) override {
    request_->onCallDone(status);
    delete this;
  }

 private:
  std::shared_ptr<RemoteRequest> request_;
  tandem::v1::WorkerGenerateRequest wire_;
  tandem::v1::WorkerGenerateResponse response_;
  grpc::ClientContext context_;
  bool first_ = true;
};

RemoteRequest::RemoteRequest(RemoteGenerator* generator, generation::RequestId id, std::vector<int32_t> prompt,
                             generation::SamplingParams params, generation::Generator::OutputCallback callback)
    : generator_(generator),
      id_(id),
      prompt_(std::move(prompt)),
      params_(std::move(params)),
      callback_(std::move(callback)) {}

std::vector<int32_t> RemoteRequest::nextPrompt() const {
  std::vector<int32_t> tokens;
  tokens.reserve(prompt_.size() + delivered_.size());
  tokens.insert(tokens.end(), prompt_.begin(), prompt_.end());
  tokens.insert(tokens.end(), delivered_.begin(), delivered_.end());
  return tokens;
}

int RemoteRequest::remainingTokens() const {
  return params_.max_tokens - static_cast<int>(delivered_.size());
}

bool RemoteRequest::startCall(tandem::v1::Worker::Stub* stub, const std::string& address,
                              const std::string& prefill_address, const std::string& wire_id) {
  tandem::v1::WorkerGenerateRequest wire;
  wire.set_request_id(wire_id);
  std::vector<int32_t> tokens = nextPrompt();
  wire.mutable_token_ids()->Assign(tokens.begin(), tokens.end());
  generation::SamplingParams params = params_;
  params.max_tokens = remainingTokens();
  // the scores went out with the first token: a migration does not redo them.
  if (!scoresPrompt()) params.prompt_logprobs.reset();
  prompt_logprobs_.clear();
  *wire.mutable_params() = rpc::toProto(params, {});
  // the tokens delivered so far were generated under the grammar: the
  // worker replays them to rebuild its matcher (DESIGN.md, structured output).
  if (!params.grammar.empty()) {
    wire.set_grammar_replay_tokens(static_cast<int32_t>(tokens.size() - prompt_.size()));
  }
  wire.set_prefill_address(prefill_address);
  auto* call = new GenerateAttempt(shared_from_this(), std::move(wire));
  {
    std::lock_guard lock(mu_);
    if (cancelled_) {
      delete call;
      return false;
    }
    call_ = call;
    address_ = address;
    abandoned_ = false;
    worker_gave_up_ = false;
    generator_->callStarted(address);
  }
  // outside mu_: a reaction may run before start() returns. a cancel that
  // comes first reaches the call through its context.
  call->start(stub);
  return true;
}

bool RemoteRequest::cancel() {
  std::lock_guard lock(mu_);
  if (final_delivered_ || cancelled_) return false;
  cancelled_ = true;
  if (call_ != nullptr) {
    call_->tryCancel();
    return false;
  }
  return true;
}

void RemoteRequest::abandonIfOn(const std::string& address) {
  std::lock_guard lock(mu_);
  if (call_ == nullptr || address_ != address || final_delivered_) return;
  abandoned_ = true;
  call_->tryCancel();
}

std::string RemoteRequest::currentAddress() const {
  std::lock_guard lock(mu_);
  return call_ == nullptr ? std::string() : address_;
}

bool RemoteRequest::cancelled() const {
  std::lock_guard lock(mu_);
  return cancelled_;
}

void RemoteRequest::finish(generation::FinishReason reason) {
  {
    std::lock_guard lock(mu_);
    if (final_delivered_) return;
    final_delivered_ = true;
  }
  generation::TokenOutput out;
  out.id = id_;
  out.token = -1;
  out.finish_reason = reason;
  out.num_prompt_tokens = static_cast<int>(prompt_.size());
  out.num_output_tokens = static_cast<int>(delivered_.size());
  out.num_cached_tokens = cached_tokens_;
  callback_(out);
  callback_ = nullptr;
  generator_->requestDone(id_);
}

void RemoteRequest::onMessage(const tandem::v1::WorkerGenerateResponse& msg, bool first) {
  if (first && generator_->metrics_ != nullptr) generator_->metrics_->countPrefill(msg.prefill());
  if (first) generator_->routeFirstToken(route_key);
  generation::FinishReason reason = rpc::fromProto(msg.finish_reason());
  {
    std::lock_guard lock(mu_);
    if (final_delivered_) return;
    const bool ours = cancelled_ || abandoned_;
    // a worker that aborts or fails a request we did not cancel (it is
    // shutting down, its engine failed): the request moves elsewhere.
    if ((reason == generation::FinishReason::kAbort || reason == generation::FinishReason::kError) && !ours) {
      worker_gave_up_ = true;
      reason = generation::FinishReason::kNone;
    }
    if (reason != generation::FinishReason::kNone) final_delivered_ = true;
  }
  if (delivered_.empty()) rpc::appendPromptLogprobs(msg.prompt_logprobs(), &prompt_logprobs_);
  if (msg.token() < 0 && reason == generation::FinishReason::kNone) return;
  generation::TokenOutput out;
  out.id = id_;
  out.token = msg.token();
  // while no token reached the client, this attempt's prompt is the
  // original one, so its cached tokens are the request's (a first attempt
  // that failed before its first token, e.g. on a connection to a worker
  // that just restarted at the same address, reported none). After that, a
  // migrated attempt's cache covers tokens the client sees as output: the
  // count stays as the attempt that produced the first token reported it.
  if (delivered_.empty()) cached_tokens_ = std::min<int>(msg.num_cached_tokens(), prompt_.size());
  if (msg.token() >= 0) {
    if (delivered_.empty()) out.prompt_logprobs = std::move(prompt_logprobs_);
    delivered_.push_back(msg.token());
    out.logprob = msg.logprob();
    out.top_logprobs.reserve(msg.top_logprobs_size());
    for (const tandem::v1::TokenLogprob& t : msg.top_logprobs()) {
      out.top_logprobs.push_back({t.token_id(), t.logprob()});
    }
  }
  out.finish_reason = reason;
  out.num_prompt_tokens = static_cast<int>(prompt_.size());
  out.num_output_tokens = static_cast<int>(delivered_.size());
  out.num_cached_tokens = cached_tokens_;
  callback_(out);
  if (reason != generation::FinishReason::kNone) callback_ = nullptr;
}

void RemoteRequest::onCallDone(const grpc::Status& status) {
  std::string address;
  bool final_delivered = false;
  bool cancelled = false;
  {
    std::lock_guard lock(mu_);
    address = address_;
    call_ = nullptr;
    final_delivered = final_delivered_;
    cancelled = cancelled_;
  }
  generator_->routeEnded(route_key, static_cast<int64_t>(delivered_.size()));
  generator_->callEnded(address);
  if (final_delivered) {
    generator_->requestDone(id_);
    return;
  }
  if (cancelled) {
    finish(generation::FinishReason::kAbort);
    return;
  }
  if (status.error_code() == grpc::StatusCode::INVALID_ARGUMENT && !worker_gave_up_) {
    // the worker refuses the request itself: another would too.
    finish(generation::FinishReason::kError);
    return;
  }
  generator_->retryAfterBrokenCall(shared_from_this(), status, address, !delivered_.empty());
}

}  // namespace tandem::router::cluster
