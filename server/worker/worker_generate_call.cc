#include "server/worker/worker_generate_call.h"

#include "common/grpc/status_mapping.h"
#include "generation/request_limits.h"
#include "proto/convert/finish_reason_proto.h"
#include "proto/convert/prompt_logprobs_proto.h"
#include "proto/convert/sampling_params_proto.h"
#include "server/worker/remote_prefill.h"

namespace tandem::worker {

using tandem::v1::WorkerGenerateResponse;

grpc::ServerWriteReactor<WorkerGenerateResponse>* WorkerGenerateCall::start(
    WorkerContext& context, const tandem::v1::WorkerGenerateRequest& request) {
  auto* reactor = new grpc_util::ServerStreamReactor<WorkerGenerateResponse>();
  auto call = std::make_shared<WorkerGenerateCall>(context, reactor->writer());
  reactor->observe(call);
  call->submit(request);
  return reactor;
}

WorkerGenerateCall::WorkerGenerateCall(WorkerContext& context, std::shared_ptr<Writer> writer)
    : context_(context), writer_(std::move(writer)) {}

void WorkerGenerateCall::submit(const tandem::v1::WorkerGenerateRequest& request) {
  in_flight_ = crash::InFlightIds::global().hold(request.request_id());
  std::unique_lock lock(mu_);
  if (!servesGenerate(context_.options.role)) {
    writer_->finish(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                                 "this is a prefill worker: it serves Prefill, not Generate"));
    return;
  }
  absl::StatusOr<generation::SamplingParams> params = rpc::fromProto(request.params());
  if (!params.ok()) {
    // fromProto fails with InvalidArgument only.
    writer_->finish(grpc_util::toGrpcStatus(params.status()));
    return;
  }
  // a migrated request's delivered tokens (the prompt's tail) go through
  // its grammar again (the engine checks the count against the prompt).
  params->grammar_replay_tokens = request.grammar_replay_tokens();
  logprobs_ = params->logprobs.has_value();
  std::vector<int32_t> prompt(request.token_ids().begin(), request.token_ids().end());
  // the router checked against what this worker reported; this worker's
  // engine asserts, so what comes over the wire is checked here again.
  if (absl::Status s = generation::checkRequest(context_.loop->limits(), prompt, *params); !s.ok()) {
    writer_->finish(grpc_util::toGrpcStatus(s));
    return;
  }
  id_ = context_.newRequestId();
  auto self = shared_from_this();
  auto callback = [self](const generation::TokenOutput& out) { self->onOutput(out); };

  // with a prefill worker named, the prompt's KV comes from it: the engine
  // admits the request with blocks for its whole prompt and startRemote
  // moves the KV into them. A request scoring its prompt is prefilled here,
  // where its logits are (the router names no P for it; the connector
  // declines it too).
  engine::RemotePrefillConnector* remote = nullptr;
  if (!request.prefill_address().empty()) {
    remote = &context_.loop->remotePrefill();
    RemotePrefill::Request r;
    r.id = id_;
    r.request_id = request.request_id();
    r.prompt = prompt;
    r.params = request.params();
    r.grammar_replay_tokens = request.grammar_replay_tokens();
    r.prefill_address = request.prefill_address();
    // weak: the call owns its RemotePrefill, which must not own the call back.
    std::weak_ptr<WorkerGenerateCall> weak = self;
    remote->expect(id_, [weak, r = std::move(r)](
                            std::optional<engine::RemotePrefillConnector::Allocation> allocation) mutable {
      if (auto call = weak.lock()) call->startRemote(std::move(r), std::move(allocation));
    });
  }
  absl::Status submitted =
      context_.loop->submit(id_, std::move(prompt), std::move(*params), callback, remote);
  if (!submitted.ok()) {
    if (remote != nullptr) remote->fail(id_);  // forgets the expectation
    writer_->finish(grpc_util::refusalToGrpc(submitted));
    return;
  }
  submitted_ = true;
  if (remote == nullptr) context_.metrics->countPrefill(tandem::v1::PREFILL_KIND_LOCAL);
}

void WorkerGenerateCall::startRemote(RemotePrefill::Request request,
                                     std::optional<engine::RemotePrefillConnector::Allocation> allocation) {
  if (!allocation) {
    // D had no free blocks for the whole prompt: it prefills it here.
    context_.metrics->countPrefill(tandem::v1::PREFILL_KIND_LOCAL);
    return;
  }
  request.allocation = std::move(*allocation);
  std::weak_ptr<WorkerGenerateCall> weak = shared_from_this();
  // it may resolve (and the engine deliver outputs) before start() returns.
  std::shared_ptr<RemotePrefill> remote =
      RemotePrefill::start(context_, std::move(request), [weak](tandem::v1::PrefillKind kind) {
        if (auto call = weak.lock()) call->prefill_.store(kind);
      });
  bool gone = false;
  {
    std::lock_guard lock(mu_);
    remote_ = remote;
    gone = generation_done_;
  }
  // the client left while the engine admitted it.
  if (gone) remote->cancel();
}

void WorkerGenerateCall::onOutput(const generation::TokenOutput& output) {
  std::lock_guard lock(mu_);
  if (generation_done_) return;
  if (output.token < 0) {
    generation_done_ = true;
    writer_->finish(output.finish_reason == generation::FinishReason::kError
                        ? grpc::Status(grpc::StatusCode::INTERNAL, "the model failed while generating")
                        : grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                       "the request was aborted (the worker is stopping)"));
    return;
  }
  // the prompt's scores go first, in messages of their own (token -1).
  rpc::forEachPromptLogprobsPart(output.prompt_logprobs,
                                 [&](std::span<const generation::PromptTokenLogprob> part) {
                                   WorkerGenerateResponse scores;
                                   scores.set_token(-1);
                                   rpc::appendPromptLogprobs(part, scores.mutable_prompt_logprobs());
                                   if (num_outputs_++ == 0) scores.set_prefill(prefill_.load());
                                   writer_->write(std::move(scores));
                                 });
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
  if (num_outputs_++ == 0) msg.set_prefill(prefill_.load());
  if (!output.finished()) {
    writer_->write(std::move(msg));
    return;
  }
  generation_done_ = true;
  msg.set_finish_reason(rpc::toProto(output.finish_reason));
  writer_->writeLast(std::move(msg));
}

void WorkerGenerateCall::onStreamBroken() {
  bool cancel = false;
  std::shared_ptr<RemotePrefill> remote;
  {
    std::lock_guard lock(mu_);
    cancel = submitted_ && !generation_done_;
    generation_done_ = true;
    remote = remote_;
  }
  if (!cancel) return;
  // outside mu_: RemotePrefill::cancel may call back.
  if (remote != nullptr) remote->cancel();
  context_.loop->cancel(id_);
}

}  // namespace tandem::worker
