#include "server/worker/worker_service.h"

#include "common/grpc/rejected_call.h"
#include "server/worker/worker_generate_call.h"
#include "server/worker/kv_events_call.h"
#include "server/worker/kv_snapshot_call.h"
#include "server/worker/prefill_call.h"

namespace tandem::worker {

grpc::ServerWriteReactor<tandem::v1::WorkerGenerateResponse>* WorkerService::Generate(
    grpc::CallbackServerContext* context, const tandem::v1::WorkerGenerateRequest* request) {
  if (grpc::Status s = context_.options.cluster_auth->check(*context); !s.ok()) {
    return grpc_util::rejectedWrite<tandem::v1::WorkerGenerateResponse>(s);
  }
  return WorkerGenerateCall::start(context_, *request);
}

grpc::ServerUnaryReactor* WorkerService::Prefill(grpc::CallbackServerContext* context,
                                                 const tandem::v1::PrefillRequest* request,
                                                 tandem::v1::PrefillResponse* response) {
  if (grpc::Status s = context_.options.cluster_auth->check(*context); !s.ok()) {
    return grpc_util::rejectedUnary(context, s);
  }
  return PrefillCall::start(context_, *request, response);
}

grpc::ServerWriteReactor<tandem::v1::KvEventBatch>* WorkerService::KvEvents(
    grpc::CallbackServerContext* context, const tandem::v1::KvEventsRequest* request) {
  if (grpc::Status s = context_.options.cluster_auth->check(*context); !s.ok()) {
    return grpc_util::rejectedWrite<tandem::v1::KvEventBatch>(s);
  }
  return KvEventsCall::start(context_, *request);
}

grpc::ServerWriteReactor<tandem::v1::KvSnapshotResponse>* WorkerService::KvSnapshot(
    grpc::CallbackServerContext* context, const tandem::v1::KvSnapshotRequest* request) {
  if (grpc::Status s = context_.options.cluster_auth->check(*context); !s.ok()) {
    return grpc_util::rejectedWrite<tandem::v1::KvSnapshotResponse>(s);
  }
  return KvSnapshotCall::start(context_);
}

grpc::ServerUnaryReactor* WorkerService::Stats(grpc::CallbackServerContext* context,
                                               const tandem::v1::StatsRequest* request,
                                               tandem::v1::WorkerStats* response) {
  if (grpc::Status s = context_.options.cluster_auth->check(*context); !s.ok()) {
    return grpc_util::rejectedUnary(context, s);
  }
  if (context_.left_routing.load()) {
    return grpc_util::rejectedUnary(
        context, grpc::Status(grpc::StatusCode::UNAVAILABLE, "the worker has left routing"));
  }
  const engine::EngineLoopStats stats = context_.loop->stats();
  response->set_worker_id(context_.info.worker_id());
  response->set_num_running(stats.num_running);
  response->set_num_waiting(stats.num_waiting);
  response->set_num_blocks(stats.num_blocks);
  response->set_num_free_blocks(stats.num_free_blocks);
  response->set_num_active_blocks(stats.num_blocks - stats.num_free_blocks);
  response->set_num_prefill_tokens_queued(stats.num_prefill_tokens_queued);
  response->set_last_event_id(context_.loop->kvEvents().lastEventId());
  response->set_num_transfers_in_flight(context_.transfers_in_flight.load());
  response->set_draining(context_.draining.load());
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* WorkerService::Info(grpc::CallbackServerContext* context,
                                              const tandem::v1::InfoRequest* request,
                                              tandem::v1::WorkerInfo* response) {
  if (grpc::Status s = context_.options.cluster_auth->check(*context); !s.ok()) {
    return grpc_util::rejectedUnary(context, s);
  }
  *response = context_.info;
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace tandem::worker
