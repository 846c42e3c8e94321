// D's side of one remote prefill (DESIGN.md, decode first): with the
// request admitted through the engine's RemotePrefillConnector (its blocks
// allocated), announce the blocks D lacks to the KV receiver, call
// Worker.Prefill on P, and once BOTH the Prefill reply and the transfer's
// completion are in:
//   - both OK → the connector's complete() with P's first token (prefill
//     "remote");
//   - either failed (P unreachable or dead, timeout, a corrupt block, ...)
//     → its fail(): D prefills locally (prefill "remote_failed").
// Waiting for both means P stopped writing D's blocks before D reuses them.
// A failure of one side cancels the other, so the wait is short.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "grpcpp/grpcpp.h"
#include "server/engine/engine_loop.h"
#include "server/worker/worker_context.h"
#include "tandem/v1/worker.grpc.pb.h"

namespace tandem::worker {

class RemotePrefill : public std::enable_shared_from_this<RemotePrefill> {
 public:
  // called once, before the engine learns the outcome, with how the prompt
  // is prefilled (remote or remote_failed), so the first output can say so.
  using ResolvedFn = std::function<void(tandem::v1::PrefillKind)>;

  struct Request {
    generation::SeqId id = 0;
    std::string request_id;
    std::vector<int32_t> prompt;
    tandem::v1::SamplingParams params;
    // see WorkerGenerateRequest.grammar_replay_tokens.
    int grammar_replay_tokens = 0;
    engine::RemotePrefillConnector::Allocation allocation;
    std::string prefill_address;
  };

  // starts the transfer and the Prefill call; never blocks on the network.
  // `context` must outlive the remote prefill (it is tracked in
  // context.tracker until resolved).
  static std::shared_ptr<RemotePrefill> start(WorkerContext& context, Request request,
                                              ResolvedFn on_resolved);

  // the client went away: cancels the Prefill call and the transfer (the
  // engine request is cancelled by the caller).
  void cancel();

  RemotePrefill(WorkerContext& context, generation::SeqId id, ResolvedFn on_resolved);

 private:
  void onTransferDone(const kv_transport::TransferResult& result);
  void onPrefillDone(const grpc::Status& status);
  // mu_ held; runs the outcome once both sides are known.
  void maybeResolveLocked();
  // KV in device memory: points `expected` at staging slots (the G1 blocks
  // are kept for the upload); ResourceExhausted when the pool is short.
  absl::Status landInStaging(kv_transport::ExpectedTransfer& expected);
  // KV in device memory: copies the landed blocks into G1 (mu_ held).
  absl::Status uploadLandedLocked();
  // the failure reason for metrics, from what the two sides reported.
  std::string failureReasonLocked() const;

  WorkerContext& context_;
  const generation::SeqId id_;
  std::string transfer_id_;
  ResolvedFn on_resolved_;
  std::chrono::steady_clock::time_point start_;

  grpc::ClientContext rpc_context_;
  tandem::v1::PrefillRequest rpc_request_;
  tandem::v1::PrefillResponse rpc_response_;

  std::mutex mu_;
  std::optional<grpc::Status> rpc_status_;                    // guarded by mu_
  std::optional<kv_transport::TransferResult> transfer_;     // guarded by mu_
  std::optional<absl::Status> expect_error_;                 // guarded by mu_
  // KV in device memory: the staging slots the blocks land in (slot i for
  // transfer index i) and the G1 blocks they are uploaded to on success.
  engine::KvStaging::Lease landing_;                          // guarded by mu_
  std::vector<int32_t> device_blocks_;                        // guarded by mu_
  bool cancelled_ = false;                                    // guarded by mu_
  bool resolved_ = false;                                     // guarded by mu_
};

}  // namespace tandem::worker
