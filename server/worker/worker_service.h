// tandem.v1.Worker over gRPC (callback API): Generate (decode side,
// streaming), Prefill (prefill side), KvEvents and KvSnapshot (the router's
// KV index; both streaming), Stats (load) and Info (who this worker is). An
// internal API of the cluster: every call must pass options.cluster_auth's
// check first (UNAUTHENTICATED otherwise).
#pragma once

#include "server/worker/worker_context.h"
#include "tandem/v1/worker.grpc.pb.h"

namespace tandem::worker {

class WorkerService final : public tandem::v1::Worker::CallbackService {
 public:
  // `context` must outlive the service.
  explicit WorkerService(WorkerContext& context) : context_(context) {}

  // tandem::v1::Worker::CallbackService
  grpc::ServerWriteReactor<tandem::v1::WorkerGenerateResponse>* Generate(
      grpc::CallbackServerContext* context,
      const tandem::v1::WorkerGenerateRequest* request) override;
  grpc::ServerUnaryReactor* Prefill(grpc::CallbackServerContext* context,
                                    const tandem::v1::PrefillRequest* request,
                                    tandem::v1::PrefillResponse* response) override;
  grpc::ServerWriteReactor<tandem::v1::KvEventBatch>* KvEvents(
      grpc::CallbackServerContext* context, const tandem::v1::KvEventsRequest* request) override;
  grpc::ServerWriteReactor<tandem::v1::KvSnapshotResponse>* KvSnapshot(
      grpc::CallbackServerContext* context, const tandem::v1::KvSnapshotRequest* request) override;
  grpc::ServerUnaryReactor* Stats(grpc::CallbackServerContext* context,
                                  const tandem::v1::StatsRequest* request,
                                  tandem::v1::WorkerStats* response) override;
  grpc::ServerUnaryReactor* Info(grpc::CallbackServerContext* context,
                                 const tandem::v1::InfoRequest* request,
                                 tandem::v1::WorkerInfo* response) override;

 private:
  WorkerContext& context_;
};

}  // namespace tandem::worker
