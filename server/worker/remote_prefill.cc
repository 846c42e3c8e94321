#include "server/worker/remote_prefill.h"

#include <cstdio>

#include "absl/strings/str_format.h"
#include "common/status.h"
#include "server/worker/prompt_block_hashes.h"

namespace tandem::worker {

RemotePrefill::RemotePrefill(WorkerContext& context, generation::SeqId id, ResolvedFn on_resolved)
    : context_(context),
      id_(id),
      on_resolved_(std::move(on_resolved)),
      start_(std::chrono::steady_clock::now()) {}

std::shared_ptr<RemotePrefill> RemotePrefill::start(WorkerContext& context, Request request,
                                                    ResolvedFn on_resolved) {
  auto self = std::make_shared<RemotePrefill>(context, request.id, std::move(on_resolved));
  context.tracker.enter();
  ++context.transfers_in_flight;
  self->transfer_id_ = absl::StrFormat("%s-%d", context.info.worker_id(), request.id);

  const int block_size = context.block_size;
  const int skip = request.allocation.num_cached_tokens / block_size;
  std::vector<kvcache::BlockHash> hashes = promptBlockHashes(request.prompt, block_size);
  const std::vector<int32_t>& blocks = request.allocation.block_ids;
  kv_transport::ExpectedTransfer expected;
  expected.transfer_id = self->transfer_id_;
  expected.timeout = context.options.prefill_timeout;
  for (size_t i = static_cast<size_t>(skip); i < blocks.size() && i < hashes.size(); ++i) {
    expected.dst_block_ids.push_back(blocks[i]);
    expected.hashes.push_back(hashes[i]);
  }
  absl::Status expect = absl::FailedPreconditionError("no KV receiver");
  if (context.receiver != nullptr && blocks.size() != hashes.size()) {
    expect = absl::InternalError(absl::StrFormat("the engine allocated %d blocks for %d",
                                                 blocks.size(), hashes.size()));
  } else if (context.receiver != nullptr) {
    expect = self->landInStaging(expected);
    if (expect.ok()) {
      expect = context.receiver->expect(
          std::move(expected),
          [self](const kv_transport::TransferResult& result) { self->onTransferDone(result); });
    }
  }
  if (!expect.ok()) {
    std::lock_guard lock(self->mu_);
    self->expect_error_ = expect;
    self->rpc_status_ = grpc::Status(grpc::StatusCode::CANCELLED, "not called");
    self->maybeResolveLocked();
    return self;
  }

  tandem::v1::PrefillRequest& req = self->rpc_request_;
  req.set_request_id(request.request_id);
  req.mutable_token_ids()->Assign(request.prompt.begin(), request.prompt.end());
  req.set_skip_blocks(skip);
  *req.mutable_params() = request.params;
  req.set_grammar_replay_tokens(request.grammar_replay_tokens);
  req.set_kv_endpoint(context.receiver->transferEndpoint(self->transfer_id_));
  req.set_transfer_id(self->transfer_id_);
  self->rpc_context_.set_deadline(std::chrono::system_clock::now() +
                                  context.options.prefill_timeout);
  context.peers->stub(request.prefill_address)
      ->async()
      ->Prefill(&self->rpc_context_, &self->rpc_request_, &self->rpc_response_,
                [self](grpc::Status status) { self->onPrefillDone(status); });
  return self;
}

void RemotePrefill::cancel() {
  bool cancel_rpc = false;
  bool cancel_transfer = false;
  {
    std::lock_guard lock(mu_);
    if (resolved_ || cancelled_) return;
    cancelled_ = true;
    cancel_rpc = !rpc_status_.has_value();
    cancel_transfer = !transfer_.has_value() && !expect_error_.has_value();
  }
  // outside the lock: both may run this object's callbacks inline.
  if (cancel_rpc) rpc_context_.TryCancel();
  if (cancel_transfer) context_.receiver->cancel(transfer_id_).IgnoreError();
}

void RemotePrefill::onTransferDone(const kv_transport::TransferResult& result) {
  if (result.status.ok()) {
    context_.metrics->observeTransfer(
        "received", result.transport, result.bytes_received, result.blocks_received,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  }
  bool cancel_rpc = false;
  {
    std::lock_guard lock(mu_);
    transfer_ = result;
    cancel_rpc = !result.status.ok() && !rpc_status_.has_value();
    if (!cancel_rpc) {
      maybeResolveLocked();
      return;
    }
  }
  // P is still working on a transfer that already failed: stop waiting for it.
  rpc_context_.TryCancel();
}

void RemotePrefill::onPrefillDone(const grpc::Status& status) {
  bool cancel_transfer = false;
  {
    std::lock_guard lock(mu_);
    rpc_status_ = status;
    cancel_transfer = !status.ok() && !transfer_.has_value();
    if (!cancel_transfer) {
      maybeResolveLocked();
      return;
    }
  }
  // the transfer's done callback (Cancelled) then resolves.
  if (!context_.receiver->cancel(transfer_id_).ok()) {
    // it completed meanwhile and its callback resolves (or resolved) it.
    std::lock_guard lock(mu_);
    maybeResolveLocked();
  }
}

std::string RemotePrefill::failureReasonLocked() const {
  if (expect_error_) return "expect_failed";
  if (transfer_ && !transfer_->status.ok() && !absl::IsCancelled(transfer_->status)) {
    switch (transfer_->status.code()) {
      case absl::StatusCode::kDataLoss: return "checksum";
      case absl::StatusCode::kDeadlineExceeded: return "timeout";
      case absl::StatusCode::kUnavailable: return "transfer_unavailable";
      default: return "transfer_error";
    }
  }
  if (rpc_status_ && !rpc_status_->ok()) {
    switch (rpc_status_->error_code()) {
      case grpc::StatusCode::UNAVAILABLE: return "prefill_unavailable";
      case grpc::StatusCode::DEADLINE_EXCEEDED: return "timeout";
      case grpc::StatusCode::DATA_LOSS: return "checksum";
      default: return "prefill_error";
    }
  }
  return "transfer_error";
}

absl::Status RemotePrefill::landInStaging(kv_transport::ExpectedTransfer& expected) {
  if (context_.receive_staging == nullptr || expected.dst_block_ids.empty()) {
    return absl::OkStatus();
  }
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(landing_, context_.receive_staging->acquire(
                                 static_cast<int>(expected.dst_block_ids.size())));
  device_blocks_ = std::move(expected.dst_block_ids);
  expected.dst_block_ids = landing_.slots();
  return absl::OkStatus();
}

absl::Status RemotePrefill::uploadLandedLocked() {
  if (landing_.size() == 0) return absl::OkStatus();
  return context_.receive_staging->upload(landing_, 0, device_blocks_);
}

void RemotePrefill::maybeResolveLocked() {
  if (resolved_) return;
  if (!expect_error_ && (!rpc_status_.has_value() || !transfer_.has_value())) return;
  resolved_ = true;
  bool ok = !expect_error_ && !cancelled_ && rpc_status_->ok() && transfer_->status.ok();
  if (ok) {
    // both sides are done: P no longer writes the slots, D verified them.
    if (absl::Status uploaded = uploadLandedLocked(); !uploaded.ok()) {
      ok = false;
      transfer_->status = uploaded;
    }
  }
  landing_.reset();
  if (ok) {
    context_.metrics->countPrefill(tandem::v1::PREFILL_KIND_REMOTE);
    on_resolved_(tandem::v1::PREFILL_KIND_REMOTE);
    generation::TokenOutput first;
    first.id = id_;
    first.token = rpc_response_.first_token();
    first.logprob = rpc_response_.logprob();
    for (const auto& t : rpc_response_.top_logprobs()) {
      first.top_logprobs.push_back({t.token_id(), t.logprob()});
    }
    context_.loop->remotePrefill().complete(id_, std::move(first));
  } else {
    if (!cancelled_) {
      const std::string reason = failureReasonLocked();
      context_.metrics->countTransferFailure(reason);
      context_.metrics->countPrefill(tandem::v1::PREFILL_KIND_REMOTE_FAILED);
      std::fprintf(stderr, "tandem worker: remote prefill of %s failed (%s: %s / %s); prefilling locally\n",
                   transfer_id_.c_str(), reason.c_str(),
                   expect_error_ ? expect_error_->ToString().c_str()
                   : transfer_ ? transfer_->status.ToString().c_str() : "",
                   rpc_status_ ? rpc_status_->error_message().c_str() : "");
    }
    on_resolved_(tandem::v1::PREFILL_KIND_REMOTE_FAILED);
    context_.loop->remotePrefill().fail(id_);
  }
  --context_.transfers_in_flight;
  context_.tracker.leave();
}

}  // namespace tandem::worker
