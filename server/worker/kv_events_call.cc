#include "server/worker/kv_events_call.h"

#include <chrono>

#include "server/worker/kv_events_feed.h"

namespace tandem::worker {
namespace {

// events per message.
constexpr size_t kMaxBatch = 512;

}  // namespace

tandem::v1::KvBlockStored toProto(const kvcache::BlockStored& block) {
  tandem::v1::KvBlockStored out;
  out.set_hash(block.hash);
  out.set_parent_hash(block.parent_hash);
  out.set_tier(static_cast<int32_t>(block.tier));
  return out;
}

tandem::v1::KvEvent toProto(const kvcache::NumberedKvEvent& event) {
  tandem::v1::KvEvent out;
  out.set_event_id(event.event_id);
  if (const auto* stored = std::get_if<kvcache::BlockStored>(&event.event)) {
    *out.mutable_stored() = toProto(*stored);
  } else if (const auto* removed = std::get_if<kvcache::BlockRemoved>(&event.event)) {
    out.mutable_removed()->set_hash(removed->hash);
    out.mutable_removed()->set_tier(static_cast<int32_t>(removed->tier));
  } else {
    out.mutable_cleared();
  }
  return out;
}

grpc::ServerWriteReactor<tandem::v1::KvEventBatch>* KvEventsCall::start(
    WorkerContext& context, const tandem::v1::KvEventsRequest& request) {
  auto* reactor = new grpc_util::ServerStreamReactor<tandem::v1::KvEventBatch>();
  auto call = std::make_shared<KvEventsCall>(context, reactor->writer(), request.after_event_id());
  reactor->observe(call);
  // what is there already goes out at once; the feed wakes the call for the rest.
  if (call->pull() && context.kv_events_feed != nullptr) context.kv_events_feed->add(call);
  return reactor;
}

KvEventsCall::KvEventsCall(WorkerContext& context, std::shared_ptr<Writer> writer, uint64_t after)
    : context_(context), writer_(std::move(writer)), after_(after) {}

bool KvEventsCall::pull() {
  std::lock_guard lock(mu_);
  if (writer_->closed()) return false;
  if (context_.stopping.load()) {
    writer_->finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the worker is stopping"));
    return false;
  }
  if (!writer_->idle()) return true;
  auto events = context_.loop->kvEvents().readAfter(after_, kMaxBatch, std::chrono::milliseconds(0));
  if (!events.ok()) {
    writer_->finish(grpc::Status(grpc::StatusCode::OUT_OF_RANGE, std::string(events.status().message())));
    return false;
  }
  if (events->empty()) return true;
  tandem::v1::KvEventBatch batch;
  batch.set_worker_id(context_.info.worker_id());
  for (const kvcache::NumberedKvEvent& e : *events) *batch.add_events() = toProto(e);
  after_ = events->back().event_id;
  return writer_->write(std::move(batch));
}

}  // namespace tandem::worker
