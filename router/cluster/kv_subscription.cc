#include "router/cluster/kv_subscription.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "absl/strings/str_format.h"
#include "common/grpc/async_stream_reader.h"
#include "router/cluster/kv_subscriber.h"

namespace tandem::router::cluster {

// reads one KvSnapshot's parts into one message (blocks of every part in
// order, num_blocks = their count); cancels the call at the first part that
// shows a problem. Deletes itself when done.
class KvSubscription::SnapshotCall final
    : public grpc_util::AsyncStreamReader<tandem::v1::KvSnapshotResponse> {
 public:
  explicit SnapshotCall(std::shared_ptr<KvSubscription> owner)
      : AsyncStreamReader(owner->calls_alive_.take(), owner->shared_.calls),
        owner_(std::move(owner)),
        out_(std::make_unique<tandem::v1::KvSnapshotResponse>()) {
    context()->set_deadline(std::chrono::system_clock::now() +
                            owner_->shared_.options->snapshot_deadline);
  }
  void start() {
    startReading([this](grpc::ClientContext* context, grpc::CompletionQueue* queue) {
      return owner_->stub_->PrepareAsyncKvSnapshot(context, request_, queue);
    });
  }

 private:
  bool onMessage(tandem::v1::KvSnapshotResponse& part) override {
    if (first_) {
      declared_ = part.num_blocks();
      out_->set_worker_id(part.worker_id());
      out_->set_last_event_id(part.last_event_id());
      first_ = false;
    } else if (part.worker_id() != out_->worker_id() ||
               part.last_event_id() != out_->last_event_id()) {
      return fail("its parts disagree on worker id or last event id", false);
    }
    const uint64_t total = static_cast<uint64_t>(out_->blocks_size()) + part.blocks_size();
    const auto most = static_cast<uint64_t>(owner_->max_blocks_);
    if (std::max(declared_, total) > most) {
      return fail(absl::StrFormat("it holds %d blocks, more than the %d this router accepts",
                                  std::max(declared_, total), most),
                  true);
    }
    if (total > declared_) {
      return fail(absl::StrFormat("it holds more blocks than the %d it announced", declared_), false);
    }
    for (tandem::v1::KvBlockStored& block : *part.mutable_blocks()) {
      *out_->add_blocks() = std::move(block);
    }
    return true;
  }

  void onDone(const grpc::Status& status) override {
    if (problem_.empty() && status.ok() &&
        (first_ || static_cast<uint64_t>(out_->blocks_size()) != declared_)) {
      problem_ = absl::StrFormat("it ended after %d of the %d blocks it announced",
                                 out_->blocks_size(), declared_);
    }
    std::unique_ptr<tandem::v1::KvSnapshotResponse> snapshot;
    if (!problem_.empty()) {
      if (refused_) {
        owner_->shared_.refused->fetch_add(1);
        if (owner_->shared_.metrics != nullptr) owner_->shared_.metrics->countKvSnapshotRefused();
      }
      std::fprintf(stderr, "tandem router: KV snapshot of worker %s refused: %s\n",
                   owner_->address_.c_str(), problem_.c_str());
    } else if (status.ok()) {
      out_->set_num_blocks(declared_);
      snapshot = std::move(out_);
    }
    owner_->onSnapshot(std::move(snapshot));
    delete this;
  }

  // the call is cancelled (onMessage's false).
  bool fail(std::string problem, bool refused) {
    problem_ = std::move(problem);
    refused_ = refused;
    return false;
  }

  // released before the reader's outstanding token (the base's): stop()
  // returns only once no call holds the subscription, which its owner
  // (holding it through stop()) then destroys, never the completion thread.
  const std::shared_ptr<KvSubscription> owner_;
  tandem::v1::KvSnapshotRequest request_;
  std::unique_ptr<tandem::v1::KvSnapshotResponse> out_;
  bool first_ = true;
  uint64_t declared_ = 0;
  std::string problem_;
  bool refused_ = false;
};

// follows Worker.KvEvents after `last` into the index until a resync is
// needed (it cancels the call then) or the stream ends. Deletes itself.
class KvSubscription::EventsCall final : public grpc_util::AsyncStreamReader<tandem::v1::KvEventBatch> {
 public:
  EventsCall(std::shared_ptr<KvSubscription> owner, std::string worker_id, uint64_t last)
      : AsyncStreamReader(owner->calls_alive_.take(), owner->shared_.calls),
        owner_(std::move(owner)),
        worker_id_(std::move(worker_id)),
        last_(last),
        since_(std::chrono::steady_clock::now()) {
    request_.set_after_event_id(last);
  }
  void start() {
    startReading([this](grpc::ClientContext* context, grpc::CompletionQueue* queue) {
      return owner_->stub_->PrepareAsyncKvEvents(context, request_, queue);
    });
  }

 private:
  bool onMessage(tandem::v1::KvEventBatch& batch) override {
    if (!batch.worker_id().empty() && batch.worker_id() != worker_id_) {
      return false;  // the worker restarted
    }
    for (const tandem::v1::KvEvent& event : batch.events()) {
      if (event.event_id() <= last_) continue;  // already in the snapshot
      // a gap (events lost): the index refuses it too.
      if (event.event_id() != last_ + 1 || !owner_->shared_.index->applyEvent(owner_->address_, event)) {
        owner_->publishBlocks();
        return false;
      }
      last_ = event.event_id();
    }
    owner_->publishBlocks();
    return true;
  }

  void onDone(const grpc::Status&) override {
    owner_->onEventsEnded(since_);
    delete this;
  }

  // released before the reader's outstanding token (the base's), as in
  // SnapshotCall.
  const std::shared_ptr<KvSubscription> owner_;
  const std::string worker_id_;
  uint64_t last_;
  const std::chrono::steady_clock::time_point since_;
  tandem::v1::KvEventsRequest request_;
};

KvSubscription::KvSubscription(const Shared& shared, std::string address, int64_t max_blocks,
                               std::shared_ptr<tandem::v1::Worker::Stub> stub)
    : shared_(shared),
      address_(std::move(address)),
      max_blocks_(max_blocks),
      stub_(std::move(stub)),
      backoff_(shared.options->retry_delay, shared.options->max_retry_delay) {}

void KvSubscription::start() { fetchSnapshot(); }

void KvSubscription::stop() {
  std::unique_lock lock(mu_);
  stop_ = true;
  if (in_flight_ != nullptr) in_flight_->TryCancel();
  idle_.wait(lock, [this] { return in_flight_ == nullptr; });
  lock.unlock();
  // a call ends, then is destroyed on the completion thread: none may outlive this.
  calls_alive_.waitNone();
}

bool KvSubscription::setCall(grpc::ClientContext* context) {
  std::lock_guard lock(mu_);
  in_flight_ = context;
  if (context == nullptr) idle_.notify_all();
  return !stop_;
}

void KvSubscription::fetchSnapshot() {
  auto* call = new SnapshotCall(shared_from_this());
  if (!setCall(call->context())) {
    // stopping: the call was never started.
    setCall(nullptr);
    delete call;
    return;
  }
  call->start();
}

void KvSubscription::onSnapshot(std::unique_ptr<tandem::v1::KvSnapshotResponse> snapshot) {
  if (!setCall(nullptr)) return;
  if (snapshot == nullptr) {
    retryLater();
    return;
  }
  // a snapshot may hold many blocks: applied on the timer thread, not on
  // the completion thread, which every subscription's calls share.
  std::shared_ptr<const tandem::v1::KvSnapshotResponse> shared(std::move(snapshot));
  std::lock_guard lock(mu_);
  if (stop_) return;
  shared_.timers->runAt(TimerQueue::Clock::now(),
                        [self = shared_from_this(), shared] { self->applySnapshot(*shared); });
}

void KvSubscription::applySnapshot(const tandem::v1::KvSnapshotResponse& snapshot) {
  {
    std::lock_guard lock(mu_);
    if (stop_) return;
  }
  shared_.index->applySnapshot(address_, snapshot);
  bool resync = false;
  {
    std::lock_guard lock(mu_);
    resync = synced_before_;
    synced_before_ = true;
  }
  if (resync) {
    shared_.resyncs->fetch_add(1);
    if (shared_.metrics != nullptr) shared_.metrics->countKvResync();
  }
  if (shared_.metrics != nullptr) shared_.metrics->countKvSnapshot();
  publishBlocks();
  auto* call = new EventsCall(shared_from_this(), snapshot.worker_id(), snapshot.last_event_id());
  if (!setCall(call->context())) {
    setCall(nullptr);
    delete call;
    return;
  }
  call->start();
}

void KvSubscription::onEventsEnded(std::chrono::steady_clock::time_point followed_since) {
  if (!setCall(nullptr)) return;
  {
    // the worker behaved for a while: its next resync is quick again.
    std::lock_guard lock(mu_);
    if (std::chrono::steady_clock::now() - followed_since >= shared_.options->stable_after) {
      backoff_.reset();
    }
  }
  retryLater();
}

void KvSubscription::retryLater() {
  // under mu_: once stop() set stop_, nothing reaches the timers (which the
  // subscriber stops before its subscriptions and destroys after them).
  std::lock_guard lock(mu_);
  if (stop_) return;
  shared_.timers->runAfter(backoff_.next(), [self = shared_from_this()] { self->fetchSnapshot(); });
}

void KvSubscription::publishBlocks() {
  if (shared_.metrics == nullptr) return;
  KvIndex& index = *shared_.index;
  shared_.metrics->setKvIndexBlocks(address_, index.numBlocks(address_));
  shared_.metrics->setKvIndexTotals(index.totalBlocks(), index.memoryBytes(), index.evictions());
}

}  // namespace tandem::router::cluster
