// Worker.KvSnapshot: streams the blocks the worker's KV cache stores
// (EngineLoop::kvEvents().snapshot()) in parts of at most kMaxBlocksPerPart
// blocks, the first carrying the total (worker.proto, KvSnapshotResponse).
// The snapshot is taken once when the call starts, so every part belongs to
// the same last_event_id. One part is in flight at a time: the next is built
// when the last write completed (onStreamDrained), so a slow reader holds at
// most one encoded part beside the snapshot itself.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>

#include "common/grpc/server_stream_writer.h"
#include "grpcpp/grpcpp.h"
#include "kvcache/kv_event_log.h"
#include "server/worker/worker_context.h"
#include "tandem/v1/worker.pb.h"

namespace tandem::worker {

class KvSnapshotCall final : public grpc_util::StreamObserver,
                             public std::enable_shared_from_this<KvSnapshotCall> {
 public:
  using Writer = grpc_util::ServerStreamWriter<tandem::v1::KvSnapshotResponse>;
  // blocks per message: ~26 bytes each on the wire, so a part is ~0.4 MiB.
  static constexpr size_t kMaxBlocksPerPart = 16384;

  // the reactor gRPC drives; the first part is written before it returns.
  static grpc::ServerWriteReactor<tandem::v1::KvSnapshotResponse>* start(WorkerContext& context);

  KvSnapshotCall(std::string worker_id, kvcache::KvSnapshot snapshot, std::shared_ptr<Writer> writer);

  // writes the next part when no write is in flight; the last part also
  // finishes the call OK. Never waits.
  void writeNext();

  // grpc_util::StreamObserver
  void onStreamBroken() override {}
  void onStreamDrained() override { writeNext(); }

 private:
  const std::string worker_id_;
  const kvcache::KvSnapshot snapshot_;
  const std::shared_ptr<Writer> writer_;
  std::mutex mu_;
  size_t next_ = 0;     // the first block not yet written; guarded by mu_
  bool done_ = false;   // the last part was written; guarded by mu_
};

}  // namespace tandem::worker
