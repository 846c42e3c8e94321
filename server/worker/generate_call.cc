#include "server/worker/generate_call.h"

#include <atomic>
#include <deque>
#include <mutex>
#include <optional>

#include "absl/strings/str_format.h"
#include "proto/convert/sampling_params_proto.h"
#include "server/worker/remote_prefill.h"

namespace tandem::worker {

using tandem::v1::WorkerGenerateResponse;

namespace {

grpc::Status toGrpc(const absl::Status& status) {
  const auto code = absl::IsFailedPrecondition(status) || absl::IsUnavailable(status)
                        ? grpc::StatusCode::UNAVAILABLE
                        : absl::IsResourceExhausted(status) ? grpc::StatusCode::RESOURCE_EXHAUSTED
                                                            : grpc::StatusCode::INVALID_ARGUMENT;
  return grpc::Status(code, std::string(status.message()));
}

std::string finishName(generation::FinishReason reason) {
  switch (reason) {
    case generation::FinishReason::kStop: return "stop";
    case generation::FinishReason::kLength: return "length";
    case generation::FinishReason::kAbort: return "abort";
    case generation::FinishReason::kError: return "error";
    case generation::FinishReason::kNone: return "";
  }
  return "";
}

}  // namespace

class GenerateCall : public std::enable_shared_from_this<GenerateCall> {
 public:
  GenerateCall(WorkerContext& context, GenerateReactor* reactor)
      : context_(context), reactor_(reactor) {}

  // validates and submits; on error ends the call with it.
  void start(const tandem::v1::WorkerGenerateRequest& request);
  void onOutput(const generation::TokenOutput& output);
  void onWriteDone(bool ok);
  void onCancel();
  void onDone();

 private:
  // mu_ held.
  void writeNextLocked();
  void finishLocked(const grpc::Status& status);
  // the client is gone or the stream broke: stop the request everywhere.
  // mu_ not held (RemotePrefill::cancel may call back).
  void cancelGeneration();

  WorkerContext& context_;
  engine::SeqId id_ = 0;
  bool logprobs_ = false;
  // how the prompt is prefilled; set before the first output.
  std::atomic<PrefillKind> prefill_{PrefillKind::kLocal};
  std::shared_ptr<RemotePrefill> remote_;  // set in start(), then read only

  std::mutex mu_;
  GenerateReactor* reactor_;  // null once the call is done
  std::deque<WorkerGenerateResponse> queue_;
  bool writing_ = false;
  std::optional<grpc::Status> final_status_;
  bool finished_ = false;  // Finish() called
  bool submitted_ = false;
  bool generation_done_ = false;
  int num_outputs_ = 0;
};

void GenerateCall::start(const tandem::v1::WorkerGenerateRequest& request) {
  std::unique_lock lock(mu_);
  if (!servesGenerate(context_.options.role)) {
    finishLocked(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                              "this is a prefill worker: it serves Prefill, not Generate"));
    return;
  }
  if (request.token_ids().empty()) {
    finishLocked(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the prompt is empty"));
    return;
  }
  absl::StatusOr<generation::SamplingParams> params = rpc::fromProto(request.params());
  if (!params.ok()) {
    finishLocked(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                              std::string(params.status().message())));
    return;
  }
  logprobs_ = params->logprobs.has_value();
  std::vector<int32_t> prompt(request.token_ids().begin(), request.token_ids().end());
  id_ = context_.newRequestId();
  auto self = shared_from_this();
  auto callback = [self](const generation::TokenOutput& out) { self->onOutput(out); };

  if (!request.prefill_address().empty()) {
    absl::StatusOr<engine::EngineLoop::KvAllocation> allocation =
        context_.loop->submitAwaitingKv(id_, prompt, *params, callback);
    if (allocation.ok()) {
      submitted_ = true;
      RemotePrefill::Request remote;
      remote.id = id_;
      remote.request_id = request.request_id();
      remote.prompt = prompt;
      remote.params = request.params();
      remote.allocation = std::move(*allocation);
      remote.prefill_address = request.prefill_address();
      lock.unlock();
      // a RemotePrefill may resolve (and deliver outputs) before start() returns.
      // weak: the call owns its RemotePrefill, which must not own the call back.
      std::weak_ptr<GenerateCall> weak = self;
      remote_ = RemotePrefill::start(context_, std::move(remote), [weak](PrefillKind kind) {
        if (auto call = weak.lock()) call->prefill_.store(kind);
      });
      return;
    }
    if (!absl::IsResourceExhausted(allocation.status())) {
      finishLocked(toGrpc(allocation.status()));
      return;
    }
    // D has no free blocks for the prompt now: queue it and prefill it here.
  }
  absl::Status submitted = context_.loop->submit(id_, std::move(prompt), std::move(*params), callback);
  if (!submitted.ok()) {
    finishLocked(toGrpc(submitted));
    return;
  }
  submitted_ = true;
  context_.metrics->countPrefill(PrefillKind::kLocal);
}

void GenerateCall::onOutput(const generation::TokenOutput& output) {
  std::lock_guard lock(mu_);
  if (generation_done_) return;
  if (output.token < 0) {
    generation_done_ = true;
    finishLocked(output.finish_reason == generation::FinishReason::kError
                     ? grpc::Status(grpc::StatusCode::INTERNAL, "the model failed while generating")
                     : grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                    "the request was aborted (the worker is stopping)"));
    return;
  }
  WorkerGenerateResponse msg;
  msg.set_token(output.token);
  if (logprobs_) {
    msg.set_logprob(output.logprob);
    for (const generation::TokenLogprob& t : output.top_logprobs) {
      auto* top = msg.add_top_logprobs();
      top->set_token_id(t.token);
      top->set_logprob(t.logprob);
    }
  }
  msg.set_num_prompt_tokens(output.num_prompt_tokens);
  msg.set_num_cached_tokens(output.num_cached_tokens);
  msg.set_num_output_tokens(output.num_output_tokens);
  if (num_outputs_++ == 0) msg.set_prefill(std::string(prefillKindName(prefill_.load())));
  if (output.finished()) {
    generation_done_ = true;
    msg.set_finish_reason(finishName(output.finish_reason));
  }
  if (reactor_ == nullptr) return;
  queue_.push_back(std::move(msg));
  if (generation_done_) final_status_ = grpc::Status::OK;
  writeNextLocked();
}

void GenerateCall::writeNextLocked() {
  if (reactor_ == nullptr || writing_ || finished_) return;
  if (!queue_.empty()) {
    writing_ = true;
    reactor_->StartWrite(&queue_.front());
    return;
  }
  if (final_status_) {
    finished_ = true;
    reactor_->Finish(*final_status_);
  }
}

void GenerateCall::finishLocked(const grpc::Status& status) {
  // queued messages go out first, then the status.
  final_status_ = status;
  writeNextLocked();
}

void GenerateCall::cancelGeneration() {
  bool cancel = false;
  {
    std::lock_guard lock(mu_);
    cancel = submitted_ && !generation_done_;
    generation_done_ = true;
  }
  if (!cancel) return;
  if (remote_ != nullptr) remote_->cancel();
  context_.loop->cancel(id_);
}

void GenerateCall::onWriteDone(bool ok) {
  if (!ok) cancelGeneration();
  std::lock_guard lock(mu_);
  writing_ = false;
  if (!queue_.empty()) queue_.pop_front();
  if (!ok) {
    // the stream broke; OnCancel/OnDone follow.
    queue_.clear();
    if (!finished_ && reactor_ != nullptr) {
      finished_ = true;
      reactor_->Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the stream was closed"));
    }
    return;
  }
  writeNextLocked();
}

void GenerateCall::onCancel() {
  cancelGeneration();
  std::lock_guard lock(mu_);
  // the message being written must live until its OnWriteDone.
  while (queue_.size() > (writing_ ? 1u : 0u)) queue_.pop_back();
  if (!finished_ && !writing_ && reactor_ != nullptr) {
    finished_ = true;
    reactor_->Finish(grpc::Status::CANCELLED);
  } else if (!finished_) {
    final_status_ = grpc::Status::CANCELLED;
  }
}

void GenerateCall::onDone() {
  std::lock_guard lock(mu_);
  reactor_ = nullptr;
}

GenerateReactor::GenerateReactor(WorkerContext& context,
                                 const tandem::v1::WorkerGenerateRequest& request)
    : call_(std::make_shared<GenerateCall>(context, this)) {
  call_->start(request);
}

void GenerateReactor::OnWriteDone(bool ok) { call_->onWriteDone(ok); }
void GenerateReactor::OnCancel() { call_->onCancel(); }
void GenerateReactor::OnDone() {
  call_->onDone();
  delete this;
}

}  // namespace tandem::worker
