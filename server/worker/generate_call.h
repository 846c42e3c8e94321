// Worker.Generate (decode side): one server-streaming call, one message per
// generated token. Without prefill_address the prompt is prefilled here
// (EngineLoop::submit); with one, D admits the request awaiting its KV and
// a RemotePrefill gets the KV and the first token from P, falling back to a
// local prefill when P fails. Writes go out one at a time (gRPC flow
// control); the rest queue. A cancelled call cancels the request everywhere.
#pragma once

#include <memory>

#include "grpcpp/grpcpp.h"
#include "server/worker/worker_context.h"
#include "tandem/v1/worker.pb.h"

namespace tandem::worker {

// the state shared with the engine's callbacks; it outlives the reactor
// when outputs arrive after the call ended.
class GenerateCall;

class GenerateReactor final
    : public grpc::ServerWriteReactor<tandem::v1::WorkerGenerateResponse> {
 public:
  GenerateReactor(WorkerContext& context, const tandem::v1::WorkerGenerateRequest& request);

  // grpc::ServerWriteReactor
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  std::shared_ptr<GenerateCall> call_;
};

}  // namespace tandem::worker
