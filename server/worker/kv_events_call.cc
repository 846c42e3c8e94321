#include "server/worker/kv_events_call.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace tandem::worker {
namespace {

// events per message, and how long one wait for new events lasts (bounds
// how late a cancelled call or a stopping worker is noticed).
constexpr size_t kMaxBatch = 512;
constexpr std::chrono::milliseconds kPollWait{200};

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

class KvEventsStream : public std::enable_shared_from_this<KvEventsStream> {
 public:
  KvEventsStream(WorkerContext& context, KvEventsReactor* reactor, uint64_t after)
      : context_(context), reactor_(reactor), after_(after) {}

  void start() {
    context_.tracker.enter();
    std::thread([self = shared_from_this()] {
      const grpc::Status status = self->run();
      self->reactor_->Finish(status);
      self->context_.tracker.leave();
    }).detach();
  }

  void onWriteDone(bool ok) {
    std::lock_guard lock(mu_);
    writing_ = false;
    if (!ok) broken_ = true;
    cv_.notify_all();
  }

  void onCancel() {
    std::lock_guard lock(mu_);
    broken_ = true;
    cv_.notify_all();
  }

 private:
  grpc::Status run() {
    tandem::v1::KvEventBatch batch;
    while (true) {
      {
        std::lock_guard lock(mu_);
        if (broken_) return grpc::Status::CANCELLED;
      }
      if (context_.stopping.load()) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the worker is stopping");
      }
      auto events = context_.loop->kvEvents().readAfter(after_, kMaxBatch, kPollWait);
      if (!events.ok()) {
        return grpc::Status(grpc::StatusCode::OUT_OF_RANGE, std::string(events.status().message()));
      }
      if (events->empty()) {
        if (context_.stopping.load()) continue;
        // readAfter returns at once after wakeAll; do not spin then.
        std::unique_lock lock(mu_);
        cv_.wait_for(lock, std::chrono::milliseconds(1), [&] { return broken_; });
        continue;
      }
      batch.Clear();
      batch.set_worker_id(context_.info.worker_id());
      for (const kvcache::NumberedKvEvent& e : *events) *batch.add_events() = toProto(e);
      after_ = events->back().event_id;
      std::unique_lock lock(mu_);
      writing_ = true;
      reactor_->StartWrite(&batch);
      cv_.wait(lock, [&] { return !writing_; });
      if (broken_) return grpc::Status::CANCELLED;
    }
  }

  WorkerContext& context_;
  KvEventsReactor* const reactor_;
  uint64_t after_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool writing_ = false;  // guarded by mu_
  bool broken_ = false;   // guarded by mu_
};

KvEventsReactor::KvEventsReactor(WorkerContext& context, const tandem::v1::KvEventsRequest& request)
    : stream_(std::make_shared<KvEventsStream>(context, this, request.after_event_id())) {
  stream_->start();
}

void KvEventsReactor::OnWriteDone(bool ok) { stream_->onWriteDone(ok); }
void KvEventsReactor::OnCancel() { stream_->onCancel(); }
void KvEventsReactor::OnDone() { delete this; }

}  // namespace tandem::worker
