#include "router/cluster/kv_subscriber.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <thread>

#include "absl/strings/str_format.h"
#include "common/backoff.h"
#include "grpcpp/grpcpp.h"

namespace tandem::router::cluster {

// one worker's snapshot + event stream, on a thread of its own.
class KvSubscriber::Subscription {
 public:
  Subscription(const KvSubscriberOptions& options, std::string address, int64_t max_blocks,
               std::shared_ptr<tandem::v1::Worker::Stub> stub, KvIndex* index,
               ClusterMetrics* metrics, std::shared_ptr<std::atomic<int>> resyncs,
               std::shared_ptr<std::atomic<int>> refused)
      : options_(options),
        address_(std::move(address)),
        max_blocks_(max_blocks),
        stub_(std::move(stub)),
        index_(index),
        metrics_(metrics),
        resyncs_(std::move(resyncs)),
        refused_(std::move(refused)),
        backoff_(options.retry_delay, options.max_retry_delay) {
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
  enum class Fetch { kOk, kFailed, kStopping };

  // waits the next backoff delay; false when stopping.
  bool waitBackoff() {
    const std::chrono::milliseconds delay = backoff_.next();
    std::unique_lock lock(mu_);
    return !cv_.wait_for(lock, delay, [this] { return stop_; });
  }
  // publishes the call's context so the destructor can cancel it; false when stopping.
  bool setContext(grpc::ClientContext* context) {
    std::lock_guard lock(mu_);
    context_ = context;
    return !stop_;
  }

  void run() {
    bool synced_before = false;
    bool first_try = true;
    while (true) {
      // every snapshot but the worker's very first waits: a resync after a
      // gap or restart, and a retry after a failure alike.
      if (!first_try && !waitBackoff()) return;
      first_try = false;
      tandem::v1::KvSnapshotResponse snapshot;
      const Fetch fetched = fetchSnapshot(&snapshot);
      if (fetched == Fetch::kStopping) return;
      if (fetched == Fetch::kFailed) continue;
      index_->applySnapshot(address_, snapshot);
      if (synced_before) {
        resyncs_->fetch_add(1);
        if (metrics_ != nullptr) metrics_->countKvResync();
      }
      if (metrics_ != nullptr) metrics_->countKvSnapshot();
      publishBlocks();
      synced_before = true;
      const auto followed_since = std::chrono::steady_clock::now();
      if (!follow(snapshot.worker_id(), snapshot.last_event_id())) return;
      // the worker behaved for a while: its next resync is quick again.
      if (std::chrono::steady_clock::now() - followed_since >= options_.stable_after) backoff_.reset();
    }
  }

  // reads the snapshot's parts into `out` (one message, blocks of every
  // part in order, num_blocks = their count). kFailed when the call failed,
  // the parts disagree, or the snapshot holds more than max_blocks_ blocks
  // (refused: counted and logged, the call cancelled at the first part
  // that shows it).
  Fetch fetchSnapshot(tandem::v1::KvSnapshotResponse* out) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + options_.snapshot_deadline);
    if (!setContext(&context)) return Fetch::kStopping;
    std::unique_ptr<grpc::ClientReader<tandem::v1::KvSnapshotResponse>> reader =
        stub_->KvSnapshot(&context, tandem::v1::KvSnapshotRequest());
    tandem::v1::KvSnapshotResponse part;
    bool first = true;
    uint64_t declared = 0;
    std::string problem;
    bool refused = false;
    while (problem.empty() && reader->Read(&part)) {
      if (first) {
        declared = part.num_blocks();
        out->set_worker_id(part.worker_id());
        out->set_last_event_id(part.last_event_id());
        first = false;
      } else if (part.worker_id() != out->worker_id() ||
                 part.last_event_id() != out->last_event_id()) {
        problem = "its parts disagree on worker id or last event id";
        break;
      }
      const uint64_t total = static_cast<uint64_t>(out->blocks_size()) + part.blocks_size();
      if (std::max(declared, total) > static_cast<uint64_t>(max_blocks_)) {
        problem = absl::StrFormat("it holds %d blocks, more than the %d this router accepts",
                                  std::max(declared, total), max_blocks_);
        refused = true;
        break;
      }
      if (total > declared) {
        problem = absl::StrFormat("it holds more blocks than the %d it announced", declared);
        break;
      }
      for (tandem::v1::KvBlockStored& block : *part.mutable_blocks()) {
        *out->add_blocks() = std::move(block);
      }
    }
    if (!problem.empty()) context.TryCancel();
    const grpc::Status status = reader->Finish();
    if (!setContext(nullptr)) return Fetch::kStopping;
    if (problem.empty() && !status.ok()) return Fetch::kFailed;
    if (problem.empty() && (first || static_cast<uint64_t>(out->blocks_size()) != declared)) {
      problem = absl::StrFormat("it ended after %d of the %d blocks it announced",
                                out->blocks_size(), declared);
    }
    if (!problem.empty()) {
      if (refused) {
        refused_->fetch_add(1);
        if (metrics_ != nullptr) metrics_->countKvSnapshotRefused();
      }
      std::fprintf(stderr, "tandem router: KV snapshot of worker %s refused: %s\n",
                   address_.c_str(), problem.c_str());
      return Fetch::kFailed;
    }
    out->set_num_blocks(declared);
    return Fetch::kOk;
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
    reader->Finish();
    return setContext(nullptr);
  }

  void publishBlocks() {
    if (metrics_ == nullptr) return;
    metrics_->setKvIndexBlocks(address_, index_->numBlocks(address_));
    metrics_->setKvIndexTotals(index_->totalBlocks(), index_->memoryBytes(), index_->evictions());
  }

  const KvSubscriberOptions& options_;
  const std::string address_;
  const int64_t max_blocks_;
  std::shared_ptr<tandem::v1::Worker::Stub> stub_;
  KvIndex* index_;
  ClusterMetrics* metrics_;
  std::shared_ptr<std::atomic<int>> resyncs_;
  std::shared_ptr<std::atomic<int>> refused_;
  Backoff backoff_;  // the subscription's thread only
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
      resyncs_(std::make_shared<std::atomic<int>>(0)),
      refused_(std::make_shared<std::atomic<int>>(0)) {}

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

int KvSubscriber::refusedSnapshots() const { return refused_->load(); }

void KvSubscriber::reconcile() {
  std::map<std::string, int64_t> wanted;  // address → the most blocks its snapshot may hold
  for (const WorkerState& w : pool_->snapshot()) {
    if (!w.has_info) continue;
    // every tier's blocks: the device pool and the tiers below it (G2, G3).
    const int64_t capacity = std::max<int64_t>(w.info.num_blocks(), w.stats.num_blocks()) +
                             std::max<int64_t>(w.info.lower_tier_blocks(), 0);
    int64_t most = options_.max_snapshot_blocks > 0
                       ? options_.max_snapshot_blocks
                       : options_.snapshot_blocks_per_capacity * capacity;
    // never more than the whole index may hold (a worker's report cannot
    // make the router buffer more).
    const int64_t index_max = static_cast<int64_t>(index_->options().max_blocks);
    if (index_max > 0) most = std::min(most, index_max);
    wanted[w.address] = most;
    // the index bounds what a worker announces by what it can hold.
    index_->setWorkerCapacity(w.address, capacity);
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
      for (const auto& [address, max_blocks] : wanted) {
        if (subscriptions_.contains(address)) continue;
        subscriptions_[address] = std::make_unique<Subscription>(
            options_, address, max_blocks, pool_->stub(address), index_, metrics_, resyncs_, refused_);
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
