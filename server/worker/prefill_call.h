// Worker.Prefill (prefill side): prefills the prompt, pushes the blocks the
// decode worker lacks (index >= skip_blocks) to its KV receiver as the
// engine completes them, and replies with the first token once D accepted
// every block. The engine loop only records progress and posts a step to
// the worker's CallExecutor, whose threads send the blocks, so neither the
// loop nor gRPC's threads wait on the network and no call owns a thread.
// Any failure (bad request, D unreachable, a rejected block) ends the call
// with an error and frees the request's blocks.
//
// Errors: FAILED_PRECONDITION on a decode worker; INVALID_ARGUMENT for an
// empty prompt, skip_blocks out of range, a missing kv_endpoint or
// transfer_id, bad params; the KV transport's code ("cannot reach the KV
// receiver: ...", "KV transfer failed: ..."); the engine's ("cannot
// prefill: ..."); CANCELLED when D cancelled; INTERNAL when the model
// failed; UNAVAILABLE when the engine aborted the prefill (stopping).
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "common/crash_report.h"
#include "grpcpp/grpcpp.h"
#include "server/worker/worker_context.h"
#include "tandem/v1/worker.pb.h"

namespace tandem::worker {

class PrefillCall : public std::enable_shared_from_this<PrefillCall> {
 public:
  // the reactor gRPC drives; the call answers through `response` and its
  // Finish. `context` outlives the call (tracked in context.tracker).
  static grpc::ServerUnaryReactor* start(WorkerContext& context, const tandem::v1::PrefillRequest& request,
                                         tandem::v1::PrefillResponse* response);

  PrefillCall(WorkerContext& context, const tandem::v1::PrefillRequest& request,
              tandem::v1::PrefillResponse* response, grpc::ServerUnaryReactor* reactor);

  // D gave up: the next step cancels the engine request.
  void cancel();

 private:
  // the first step: validates, opens the transfer and submits the prefill.
  void begin();
  // the request's own checks; sets `params` when they pass.
  grpc::Status validate(generation::SamplingParams* params) const;
  // posts step() unless one is queued or running (mu_ held).
  void scheduleLocked();
  // sends what the engine computed since the last step, reacts to a cancel,
  // and completes the call once the engine is done. one step at a time.
  void step();
  // the engine is done: the last blocks, the transfer's end, the reply.
  grpc::Status complete(const generation::TokenOutput& done, const std::vector<int32_t>& table,
                        bool cancelled);
  // cancels the engine request once.
  void cancelPrefill();
  // ends the call (once).
  void finish(const grpc::Status& status);
  // the transport that carries the transfer, for metrics and the reply.
  std::string transportName() const;
  // sends blocks [next_block_, end) of the prompt that D needs.
  absl::Status sendBlocks(int end, const std::vector<int32_t>& block_table);
  void fillResponse(const generation::TokenOutput& done, uint64_t bytes, const std::string& transport);

  WorkerContext& context_;
  const tandem::v1::PrefillRequest request_;
  // the router's id of the request, named in a crash report while the call
  // lives (common/crash_report.h).
  const crash::InFlightIds::Hold in_flight_;
  tandem::v1::PrefillResponse* const response_;
  grpc::ServerUnaryReactor* const reactor_;

  // the steps' own (they run one at a time).
  generation::SeqId id_ = 0;
  std::vector<kvcache::BlockHash> hashes_;
  // KV in device memory: the pinned slots the blocks are staged in, slot i
  // for transfer index i; declared before stream_, which reads them until
  // it is gone.
  engine::KvStaging::Lease staging_;
  kv_transport::KvSendStreamPtr stream_;
  std::chrono::steady_clock::time_point start_;
  int next_block_ = 0;
  int blocks_sent_ = 0;
  bool cancel_sent_ = false;
  absl::Status send_status_;

  // what the loop thread and gRPC report.
  std::mutex mu_;
  int num_computed_ = 0;                         // guarded by mu_
  std::vector<int32_t> block_table_;             // guarded by mu_
  std::optional<generation::TokenOutput> done_;  // guarded by mu_
  bool cancelled_ = false;                       // guarded by mu_
  // a step is queued or running (true from start: begin() is the first).
  bool step_queued_ = true;                      // guarded by mu_
};

}  // namespace tandem::worker
