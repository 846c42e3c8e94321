#include "router/cluster/kv_subscriber.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <thread>

#include "grpcpp/grpcpp.h"

namespace tandem::router::cluster {

// one worker's snapshot + event stream, on a thread of its own.
class KvSubscriber::Subscription {
 public:
  Subscription(const KvSubscriberOptions& options, std::string address,
               std::shared_ptr<tandem::v1::Worker::Stub> stub, KvIndex* index,
               ClusterMetrics* metrics, std::shared_ptr<std::atomic<int>> resyncs)
      : options_(options),
        address_(std::move(address)),
        stub_(std::move(stub)),
        index_(index),
        metrics_(metrics),
        resyncs_(std::move(resyncs)) {
    thread_ = std::thread([this] { run(); });
  }

  ~Subscription() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
      if (context_ != nullptr) context_->TryCancel();
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  // false when stopping.
  bool waitRetry() {
    std::unique_lock lock(mu_);
    return !cv_.wait_for(lock, options_.retry_delay, [this] { return stop_; });
  }
  // publishes the call's context so the destructor can cancel it; false when stopping.
  bool setContext(grpc::ClientContext* context) {
    std::lock_guard lock(mu_);
    context_ = context;
    return !stop_;
  }

  void run() {
    bool synced_before = false;
    while (true) {
      tandem::v1::KvSnapshotResponse snapshot;
      {
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + options_.snapshot_deadline);
        if (!setContext(&context)) return;
        grpc::Status status = stub_->KvSnapshot(&context, tandem::v1::KvSnapshotRequest(), &snapshot);
        if (!setContext(nullptr)) return;
        if (!status.ok()) {
          if (!waitRetry()) return;
          continue;
        }
      }
      index_->applySnapshot(address_, snapshot);
      if (synced_before) {
        resyncs_->fetch_add(1);
        if (metrics_ != nullptr) metrics_->countKvResync();
      }
      if (metrics_ != nullptr) metrics_->countKvSnapshot();
      publishBlocks();
      synced_before = true;
      if (!follow(snapshot.worker_id(), snapshot.last_event_id())) return;
    }
  }

  // streams events after `last`; returns when a resync is needed (true) or
  // when stopping (false).
  bool follow(const std::string& worker_id, uint64_t last) {
    grpc::ClientContext context;
    if (!setContext(&context)) return false;
    tandem::v1::KvEventsRequest request;
    request.set_after_event_id(last);
    std::unique_ptr<grpc::ClientReader<tandem::v1::KvEventBatch>> reader =
        stub_->KvEvents(&context, request);
    tandem::v1::KvEventBatch batch;
    bool resync = false;
    while (!resync && reader->Read(&batch)) {
      if (!batch.worker_id().empty() && batch.worker_id() != worker_id) break;
      for (const tandem::v1::KvEvent& event : batch.events()) {
        if (event.event_id() <= last) continue;  // already in the snapshot
        // a gap (events lost): the index refuses it too.
        if (event.event_id() != last + 1 || !index_->applyEvent(address_, event)) {
          resync = true;
          break;
        }
        last = event.event_id();
      }
      publishBlocks();
    }
    context.TryCancel();
    grpc::Status status = reader->Finish();
    if (!setContext(nullptr)) return false;
    // a stream that ended in error (worker gone): give it a moment.
    if (!resync && !status.ok() && status.error_code() != grpc::StatusCode::OUT_OF_RANGE &&
        status.error_code() != grpc::StatusCode::CANCELLED) {
      return waitRetry();
    }
    return true;
  }

  void publishBlocks() {
    if (metrics_ == nullptr) return;
    metrics_->setKvIndexBlocks(address_, index_->numBlocks(address_));
    metrics_->setKvIndexTotals(index_->totalBlocks(), index_->memoryBytes(), index_->evictions());
  }

  const KvSubscriberOptions& options_;
  const std::string address_;
  std::shared_ptr<tandem::v1::Worker::Stub> stub_;
  KvIndex* index_;
  ClusterMetrics* metrics_;
  std::shared_ptr<std::atomic<int>> resyncs_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                         // guarded by mu_
  grpc::ClientContext* context_ = nullptr;    // the call in flight; guarded by mu_
  std::thread thread_;
};

KvSubscriber::KvSubscriber(KvSubscriberOptions options, WorkerPool* pool, KvIndex* index,
                           ClusterMetrics* metrics)
    : options_(options),
      pool_(pool),
      index_(index),
      metrics_(metrics),
      resyncs_(std::make_shared<std::atomic<int>>(0)) {}

KvSubscriber::~KvSubscriber() { stop(); }

void KvSubscriber::start() {
  std::lock_guard lock(mu_);
  if (reconciler_ != nullptr) return;
  stop_ = false;
  reconciler_ = std::make_unique<TimerQueue>("kv-reconcile");
  reconciler_->runEvery(std::chrono::steady_clock::now(), options_.reconcile_interval,
                        [this] { reconcile(); });
}

void KvSubscriber::stop() {
  std::unique_ptr<TimerQueue> reconciler;
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    reconciler = std::move(reconciler_);
  }
  reconciler.reset();  // joins outside mu_: a reconcile in progress takes it
  std::map<std::string, std::unique_ptr<Subscription>> subscriptions;
  {
    std::lock_guard lock(mu_);
    subscriptions.swap(subscriptions_);
  }
  subscriptions.clear();
}

int KvSubscriber::resyncs() const { return resyncs_->load(); }

void KvSubscriber::reconcile() {
  std::map<std::string, bool> wanted;
  for (const WorkerState& w : pool_->snapshot()) {
    if (!w.has_info) continue;
    wanted[w.address] = true;
    // the index bounds what a worker announces by what it can hold.
    index_->setWorkerCapacity(w.address, std::max<int64_t>(w.info.num_blocks(), w.stats.num_blocks()));
  }
  std::vector<std::unique_ptr<Subscription>> gone;
  std::vector<std::string> gone_addresses;
  {
    std::lock_guard lock(mu_);
    for (auto it = subscriptions_.begin(); it != subscriptions_.end();) {
      if (wanted.contains(it->first)) {
        ++it;
        continue;
      }
      gone_addresses.push_back(it->first);
      gone.push_back(std::move(it->second));
      it = subscriptions_.erase(it);
    }
    if (!stop_) {
      for (const auto& [address, unused] : wanted) {
        if (subscriptions_.contains(address)) continue;
        subscriptions_[address] = std::make_unique<Subscription>(
            options_, address, pool_->stub(address), index_, metrics_, resyncs_);
      }
    }
  }
  gone.clear();  // joins their threads, outside mu_
  for (const std::string& address : gone_addresses) {
    index_->removeWorker(address);
    if (metrics_ != nullptr) metrics_->removeKvIndexWorker(address);
  }
}

}  // namespace tandem::router::cluster
