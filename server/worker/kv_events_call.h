// Worker.KvEvents: streams the KV cache's numbered events
// (EngineLoop::kvEvents()) after the subscriber's last seen id, in batches,
// until the call is cancelled or the worker stops (UNAVAILABLE). OUT_OF_RANGE
// when the events the subscriber needs are no longer kept (it then takes a
// KvSnapshot). No call waits on a thread of its own: a call pulls its next
// batch when its last write completed, and the worker's one KvEventsFeed
// thread wakes the calls that had caught up when new events arrive.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

#include "common/grpc/server_stream_writer.h"
#include "grpcpp/grpcpp.h"
#include "server/worker/worker_context.h"
#include "tandem/v1/worker.pb.h"

namespace tandem::worker {

class KvEventsCall final : public grpc_util::StreamObserver,
                           public std::enable_shared_from_this<KvEventsCall> {
 public:
  using Writer = grpc_util::ServerStreamWriter<tandem::v1::KvEventBatch>;

  // the reactor gRPC drives; the call joins context.kv_events_feed.
  static grpc::ServerWriteReactor<tandem::v1::KvEventBatch>* start(
      WorkerContext& context, const tandem::v1::KvEventsRequest& request);

  KvEventsCall(WorkerContext& context, std::shared_ptr<Writer> writer, uint64_t after);

  // writes the next batch when no write is in flight and events are there;
  // never waits. Ends the call when the worker is stopping or the events it
  // needs are gone. false once the call is over (the feed then drops it).
  bool pull();

  // grpc_util::StreamObserver
  void onStreamBroken() override {}
  void onStreamDrained() override { pull(); }

 private:
  WorkerContext& context_;
  const std::shared_ptr<Writer> writer_;
  std::mutex mu_;
  uint64_t after_;  // the last event id written; guarded by mu_
};

// the proto form of one numbered event / a stored block.
tandem::v1::KvEvent toProto(const kvcache::NumberedKvEvent& event);
tandem::v1::KvBlockStored toProto(const kvcache::BlockStored& block);

}  // namespace tandem::worker
