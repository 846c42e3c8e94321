// Worker.Prefill (prefill side): prefills the prompt, pushes the blocks the
// decode worker lacks (index >= skip_blocks) to its KV receiver as the
// engine completes them, and replies with the first token once D accepted
// every block. The engine loop only records progress; a thread of the call's
// own sends the blocks, so the loop never waits on the network. Any failure
// (bad request, D unreachable, a rejected block) ends the call with an
// error and frees the request's blocks.
#pragma once

#include <memory>

#include "grpcpp/grpcpp.h"
#include "server/worker/worker_context.h"
#include "tandem/v1/worker.pb.h"

namespace tandem::worker {

class PrefillJob;

class PrefillReactor final : public grpc::ServerUnaryReactor {
 public:
  // starts the job; it answers through `response` and Finish.
  PrefillReactor(WorkerContext& context, const tandem::v1::PrefillRequest& request,
                 tandem::v1::PrefillResponse* response);

  // grpc::ServerUnaryReactor
  void OnCancel() override;
  void OnDone() override;

 private:
  std::shared_ptr<PrefillJob> job_;
};

}  // namespace tandem::worker
