// Worker.KvEvents: streams the KV cache's numbered events
// (EngineLoop::kvEvents()) after the subscriber's last seen id, in batches,
// until the call is cancelled or the worker stops. OUT_OF_RANGE when the
// events the subscriber needs are no longer kept (it then takes a
// KvSnapshot). A thread of the call's own waits for events, so no gRPC
// thread blocks.
#pragma once

#include <memory>

#include "grpcpp/grpcpp.h"
#include "server/worker/worker_context.h"
#include "tandem/v1/worker.pb.h"

namespace tandem::worker {

class KvEventsStream;

class KvEventsReactor final : public grpc::ServerWriteReactor<tandem::v1::KvEventBatch> {
 public:
  KvEventsReactor(WorkerContext& context, const tandem::v1::KvEventsRequest& request);

  // grpc::ServerWriteReactor
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  std::shared_ptr<KvEventsStream> stream_;
};

// the proto form of one numbered event / a stored block.
tandem::v1::KvEvent toProto(const kvcache::NumberedKvEvent& event);
tandem::v1::KvBlockStored toProto(const kvcache::BlockStored& block);

}  // namespace tandem::worker
