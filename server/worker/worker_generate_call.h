// Worker.Generate (decode side): one server-streaming call, one message per
// generated token (with prompt_logprobs, the prompt's scores in messages of
// their own before the first; such a request is always prefilled here).
// Without prefill_address the prompt is prefilled here; with one, the
// engine admits the request through its RemotePrefillConnector and a
// RemotePrefill gets the KV and the first token from P, falling back to a
// local prefill when P fails. The messages go out through the shared
// ServerStreamWriter (one write in flight, the rest queued). A cancelled
// call cancels the request everywhere.
//
// Errors: FAILED_PRECONDITION on a prefill worker; INVALID_ARGUMENT for an
// empty prompt, bad params or what the engine refuses; UNAVAILABLE when the
// engine is stopping or aborted the request; RESOURCE_EXHAUSTED when the
// engine has no room; INTERNAL when the model failed.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>

#include "common/crash_report.h"
#include "common/grpc/server_stream_writer.h"
#include "grpcpp/grpcpp.h"
#include "server/worker/remote_prefill.h"
#include "server/worker/worker_context.h"
#include "tandem/v1/worker.pb.h"

namespace tandem::worker {

class WorkerGenerateCall final : public grpc_util::StreamObserver,
                                 public std::enable_shared_from_this<WorkerGenerateCall> {
 public:
  using Writer = grpc_util::ServerStreamWriter<tandem::v1::WorkerGenerateResponse>;

  // the reactor gRPC drives for `request`. `context` outlives the call.
  static grpc::ServerWriteReactor<tandem::v1::WorkerGenerateResponse>* start(
      WorkerContext& context, const tandem::v1::WorkerGenerateRequest& request);

  WorkerGenerateCall(WorkerContext& context, std::shared_ptr<Writer> writer);

  // grpc_util::StreamObserver: the client left or the stream broke.
  void onStreamBroken() override;

 private:
  // validates and submits; on error ends the call with it.
  void submit(const tandem::v1::WorkerGenerateRequest& request);
  void onOutput(const generation::TokenOutput& output);
  // on the engine thread, when the request was admitted: moves the prompt's
  // KV from P into `allocation`'s blocks (nullopt: D prefills it itself).
  void startRemote(RemotePrefill::Request request,
                   std::optional<engine::RemotePrefillConnector::Allocation> allocation);

  WorkerContext& context_;
  const std::shared_ptr<Writer> writer_;
  generation::SeqId id_ = 0;
  bool logprobs_ = false;
  // how the prompt is prefilled; set before the first output.
  std::atomic<tandem::v1::PrefillKind> prefill_{tandem::v1::PREFILL_KIND_LOCAL};

  // the router's id of this attempt, named in a crash report while the
  // call runs (common/crash_report.h).
  crash::InFlightIds::Hold in_flight_;

  std::mutex mu_;
  bool submitted_ = false;        // guarded by mu_
  bool generation_done_ = false;  // guarded by mu_
  int num_outputs_ = 0;           // guarded by mu_
  std::shared_ptr<RemotePrefill> remote_;  // guarded by mu_; set once admitted
};

}  // namespace tandem::worker
