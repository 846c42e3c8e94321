#include "router/cluster/worker_pool.h"

#include <condition_variable>

#include "grpcpp/grpcpp.h"
#include "absl/strings/str_cat.h"
#include "router/cluster/worker_report_check.h"

namespace tandem::router::cluster {
namespace {

using Clock = std::chrono::steady_clock;

// counts outstanding calls of one poll round.
struct Latch {
  std::mutex mu;
  std::condition_variable cv;
  int pending = 0;
  void done() {
    std::lock_guard lock(mu);
    if (--pending == 0) cv.notify_all();
  }
};

}  // namespace

WorkerPool::WorkerPool(WorkerPoolOptions options, ClusterMetrics* metrics)
    : options_(options), metrics_(metrics) {}

WorkerPool::~WorkerPool() { stop(); }

void WorkerPool::setMetrics(ClusterMetrics* metrics) {
  std::lock_guard lock(mu_);
  metrics_ = metrics;
  publishMetricsLocked();
}

void WorkerPool::start() {
  std::lock_guard lock(mu_);
  if (poller_ != nullptr) return;
  poller_ = std::make_unique<TimerQueue>("pool-poll");
  // a round that outlasts the interval is followed by the next at once.
  poller_->runEvery(Clock::now(), options_.poll_interval, [this] { pollOnce(); });
}

void WorkerPool::stop() {
  std::unique_ptr<TimerQueue> poller;
  {
    std::lock_guard lock(mu_);
    poller = std::move(poller_);
  }
  // joins outside mu_: the round in progress takes it.
  poller.reset();
}

WorkerPool::Entry& WorkerPool::entryLocked(const std::string& address) {
  auto [it, inserted] = workers_.try_emplace(address);
  if (inserted) {
    it->second.state.address = address;
    it->second.unhealthy_since = Clock::now();
    it->second.stub = newStub(address);
    it->second.stub_tls_generation = options_.auth->tlsGeneration();
  }
  return it->second;
}

const std::shared_ptr<tandem::v1::Worker::Stub>& WorkerPool::currentStubLocked(Entry& e) {
  const uint64_t generation = options_.auth->tlsGeneration();
  if (e.stub_tls_generation != generation) {
    e.stub = newStub(e.state.address);
    e.stub_tls_generation = generation;
  }
  return e.stub;
}

void WorkerPool::setHealthyLocked(Entry& e, bool healthy) {
  if (e.state.healthy && !healthy) e.unhealthy_since = Clock::now();
  e.state.healthy = healthy;
}

std::shared_ptr<tandem::v1::Worker::Stub> WorkerPool::newStub(const std::string& address) const {
  return tandem::v1::Worker::NewStub(options_.auth->channel(address));
}

absl::Status WorkerPool::checkModelLocked(const tandem::v1::WorkerInfo& info) const {
  if (model_name_.empty() || info.model_name() == model_name_) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat("this router serves model '", model_name_,
                                                    "', the worker reports '", info.model_name(),
                                                    "'"));
}

absl::Status WorkerPool::registerWorker(const tandem::v1::WorkerInfo& info) {
  if (absl::Status s = checkWorkerInfo(info); !s.ok()) return s;
  std::lock_guard lock(mu_);
  if (absl::Status s = checkModelLocked(info); !s.ok()) return s;
  Entry& e = entryLocked(info.address());
  if (!e.state.has_info || e.state.info.worker_id() != info.worker_id()) {
    // a new worker, or a restarted one at the same address: its stats and
    // KV state are new.
    e.state.has_stats = false;
    e.state.stats.Clear();
    e.state.draining = false;
  }
  e.state.sources |= kRegistered;
  e.state.info = info;
  e.state.has_info = true;
  e.failures = 0;
  setHealthyLocked(e, true);
  publishMetricsLocked();
  return absl::OkStatus();
}

void WorkerPool::setModelName(const std::string& model_name) {
  std::lock_guard lock(mu_);
  model_name_ = model_name;
  for (auto it = workers_.begin(); it != workers_.end();) {
    Entry& e = it->second;
    if (!e.state.has_info || checkModelLocked(e.state.info).ok()) {
      ++it;
    } else if (e.state.sources == kRegistered) {
      it = workers_.erase(it);
    } else {
      // listed: learn it again (its next Info answer is checked).
      e.state.has_info = false;
      e.state.has_stats = false;
      e.failures = options_.failures_to_unhealthy;
      setHealthyLocked(e, false);
      ++it;
    }
  }
  publishMetricsLocked();
}

void WorkerPool::deregisterWorker(const std::string& worker_id, bool draining) {
  std::lock_guard lock(mu_);
  for (auto it = workers_.begin(); it != workers_.end(); ++it) {
    Entry& e = it->second;
    if (!e.state.has_info || e.state.info.worker_id() != worker_id) continue;
    if (draining) {
      e.state.draining = true;
      break;
    }
    e.state.sources &= ~static_cast<uint32_t>(kRegistered);
    if (e.state.sources == 0) {
      workers_.erase(it);
    } else {
      setHealthyLocked(e, false);
      e.failures = options_.failures_to_unhealthy;
    }
    break;
  }
  publishMetricsLocked();
}

void WorkerPool::setDiscovered(WorkerSource source, const std::vector<std::string>& addresses) {
  std::lock_guard lock(mu_);
  for (const std::string& address : addresses) {
    if (!address.empty()) entryLocked(address).state.sources |= source;
  }
  for (auto it = workers_.begin(); it != workers_.end();) {
    uint32_t& sources = it->second.state.sources;
    if ((sources & source) != 0 &&
        std::find(addresses.begin(), addresses.end(), it->first) == addresses.end()) {
      sources &= ~static_cast<uint32_t>(source);
    }
    // a draining worker that still answers keeps its streams until it leaves.
    const bool keep = sources != 0 || (it->second.state.draining && it->second.state.healthy);
    it = keep ? std::next(it) : workers_.erase(it);
  }
  publishMetricsLocked();
}

std::vector<WorkerState> WorkerPool::snapshot() const {
  std::lock_guard lock(mu_);
  std::vector<WorkerState> out;
  out.reserve(workers_.size());
  for (const auto& [address, e] : workers_) out.push_back(e.state);
  return out;
}

std::shared_ptr<tandem::v1::Worker::Stub> WorkerPool::stub(const std::string& address) {
  std::lock_guard lock(mu_);
  auto it = workers_.find(address);
  if (it != workers_.end()) return currentStubLocked(it->second);
  return newStub(address);
}

void WorkerPool::reportFailure(const std::string& address) {
  std::lock_guard lock(mu_);
  auto it = workers_.find(address);
  if (it == workers_.end()) return;
  it->second.failures = std::max(it->second.failures, options_.failures_to_unhealthy);
  setHealthyLocked(it->second, false);
  publishMetricsLocked();
}

void WorkerPool::pollOnce() {
  struct Call {
    grpc::ClientContext context;
    tandem::v1::InfoRequest info_request;
    tandem::v1::StatsRequest stats_request;
    tandem::v1::WorkerInfo info;
    tandem::v1::WorkerStats stats;
    std::string address;
    std::string worker_id;  // empty: an Info call
    uint64_t poll = 0;
  };
  std::vector<std::pair<std::shared_ptr<Call>, std::shared_ptr<tandem::v1::Worker::Stub>>> calls;
  {
    std::lock_guard lock(mu_);
    const uint64_t poll = ++polls_;
    for (auto& [address, e] : workers_) {
      auto call = std::make_shared<Call>();
      call->address = address;
      call->poll = poll;
      if (e.state.has_info) call->worker_id = e.state.info.worker_id();
      call->context.set_deadline(std::chrono::system_clock::now() + options_.rpc_deadline);
      calls.emplace_back(std::move(call), currentStubLocked(e));
    }
  }
  auto latch = std::make_shared<Latch>();
  latch->pending = static_cast<int>(calls.size());
  for (auto& entry : calls) {
    // not a structured binding: clang before 16 cannot capture one (fuzz build).
    const auto& call = entry.first;
    const auto& stub = entry.second;
    if (call->worker_id.empty()) {
      stub->async()->Info(&call->context, &call->info_request, &call->info,
                          [this, call, latch](grpc::Status status) {
                            onInfo(call->address, call->poll, status.ok(), call->info);
                            latch->done();
                          });
    } else {
      stub->async()->Stats(&call->context, &call->stats_request, &call->stats,
                           [this, call, latch](grpc::Status status) {
                             onStats(call->address, call->poll, call->worker_id, status.ok(),
                                     call->stats);
                             latch->done();
                           });
    }
  }
  std::unique_lock lock(latch->mu);
  latch->cv.wait(lock, [&] { return latch->pending == 0; });
  lock.unlock();
  std::lock_guard pool_lock(mu_);
  dropStaleLocked();
  publishMetricsLocked();
}

bool WorkerPool::takeAnswerLocked(Entry& e, uint64_t poll) {
  if (poll < e.answered_poll) return false;
  e.answered_poll = poll;
  return true;
}

void WorkerPool::onInfo(const std::string& address, uint64_t poll, bool ok,
                        const tandem::v1::WorkerInfo& info) {
  std::lock_guard lock(mu_);
  auto it = workers_.find(address);
  if (it == workers_.end()) return;
  Entry& e = it->second;
  if (!takeAnswerLocked(e, poll)) return;
  // the worker's own view of its address may differ (0.0.0.0); it is
  // checked, then replaced by the one we reach it at.
  if (!ok || !checkWorkerInfo(info).ok() || !checkModelLocked(info).ok()) {
    if (++e.failures >= options_.failures_to_unhealthy) setHealthyLocked(e, false);
    return;
  }
  e.state.info = info;
  e.state.info.set_address(address);
  e.state.has_info = true;
  e.state.has_stats = false;
  e.state.draining = false;
  // healthy once its Stats answer.
}

void WorkerPool::onStats(const std::string& address, uint64_t poll, const std::string& worker_id,
                         bool ok, const tandem::v1::WorkerStats& stats) {
  std::lock_guard lock(mu_);
  auto it = workers_.find(address);
  if (it == workers_.end()) return;
  Entry& e = it->second;
  // the entry was replaced (re-registration) while the call was out.
  if (!e.state.has_info || e.state.info.worker_id() != worker_id) return;
  if (!takeAnswerLocked(e, poll)) return;
  // stats out of range (a negative load would attract every request)
  // count as a failed poll.
  if (!ok || !checkWorkerStats(stats).ok()) {
    if (++e.failures >= options_.failures_to_unhealthy) setHealthyLocked(e, false);
    return;
  }
  if (!stats.worker_id().empty() && stats.worker_id() != worker_id) {
    // another incarnation answers at this address: learn it again (a
    // registered worker also re-registers with its new id).
    if ((e.state.sources & ~static_cast<uint32_t>(kRegistered)) != 0) {
      e.state.has_info = false;
    } else {
      ++e.failures;
    }
    e.state.has_stats = false;
    setHealthyLocked(e, false);
    return;
  }
  e.failures = 0;
  e.state.stats = stats;
  e.state.has_stats = true;
  // once draining, a worker stays so (a Stats answer from before its drain
  // may arrive after its Deregister).
  e.state.draining = e.state.draining || stats.draining();
  setHealthyLocked(e, true);
}

void WorkerPool::dropStaleLocked() {
  const Clock::time_point now = Clock::now();
  for (auto it = workers_.begin(); it != workers_.end();) {
    const Entry& e = it->second;
    const bool registered_only = e.state.sources == kRegistered;
    // sources == 0: a draining worker discovery no longer lists, now gone.
    if ((e.state.sources == 0 && !e.state.healthy) ||
        (registered_only && !e.state.healthy && now - e.unhealthy_since > options_.drop_after)) {
      it = workers_.erase(it);
    } else {
      ++it;
    }
  }
}

void WorkerPool::publishMetricsLocked() {
  if (metrics_ == nullptr) return;
  std::map<std::pair<tandem::v1::WorkerRole, WorkerHealth>, int> counts;
  for (tandem::v1::WorkerRole role :
       {tandem::v1::WORKER_ROLE_PREFILL, tandem::v1::WORKER_ROLE_DECODE, tandem::v1::WORKER_ROLE_BOTH}) {
    for (WorkerHealth health : {WorkerHealth::kHealthy, WorkerHealth::kUnhealthy, WorkerHealth::kDraining}) {
      counts[{role, health}] = 0;
    }
  }
  std::map<tandem::v1::WorkerRole, ClusterMetrics::RoleLoad> loads = {
      {tandem::v1::WORKER_ROLE_PREFILL, {}}, {tandem::v1::WORKER_ROLE_DECODE, {}},
      {tandem::v1::WORKER_ROLE_BOTH, {}}};
  for (const auto& [address, e] : workers_) {
    if (e.state.has_info) {
      const WorkerHealth health = !e.state.healthy ? WorkerHealth::kUnhealthy
                                  : e.state.draining ? WorkerHealth::kDraining
                                                     : WorkerHealth::kHealthy;
      ++counts[{e.state.info.role(), health}];
    }
    // a draining worker is no capacity: the planner sizes without it.
    if (!e.state.routable() || !e.state.has_stats) continue;
    ClusterMetrics::RoleLoad& load = loads[e.state.info.role()];
    const tandem::v1::WorkerStats& s = e.state.stats;
    load.running += s.num_running();
    load.waiting += s.num_waiting();
    load.prefill_tokens_queued += s.num_prefill_tokens_queued();
    load.kv_blocks += s.num_blocks();
    load.kv_used_blocks += s.num_active_blocks();
  }
  for (const auto& [key, count] : counts) metrics_->setWorkers(key.first, key.second, count);
  for (const auto& [role, load] : loads) metrics_->setRoleLoad(role, load);
}

}  // namespace tandem::router::cluster
