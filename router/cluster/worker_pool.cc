#include "router/cluster/worker_pool.h"

#include <algorithm>
#include <condition_variable>
#include <functional>

#include "grpcpp/grpcpp.h"
#include "absl/strings/str_cat.h"
#include "router/cluster/worker_report_check.h"

namespace tandem::router::cluster {
namespace {

using Clock = std::chrono::steady_clock;

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
  // a round sends its calls and returns: the answers are applied on gRPC's
  // threads, and a tick while the previous round is still out is skipped.
  poller_->runEvery(Clock::now(), options_.poll_interval,
                    [this] { startRound(/*from_timer=*/true, nullptr); });
}

void WorkerPool::stop() {
  std::unique_ptr<TimerQueue> poller;
  {
    std::lock_guard lock(mu_);
    poller = std::move(poller_);
  }
  // joins outside mu_: a tick in progress takes it.
  poller.reset();
  // rounds out now send no more calls; the calls they sent end within
  // rpc_deadline, and their rounds are destroyed after.
  stop_generation_.fetch_add(1);
  rounds_out_.waitNone();
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
    e.contacted = false;
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

// one poll of the workers known when it began: at most
// options.max_polls_in_flight Info/Stats calls out at once (of which at most
// options.max_first_contacts open a new channel's connection), the next
// sent as one is answered, none left waiting on a thread. Sends from the thread that
// starts it and from the pool's completion thread, where the answers are
// applied (one sender at a time loops); ends the round in the pool after
// the last answer was applied. Lives as long as its calls.
class WorkerPool::PollRound : public std::enable_shared_from_this<PollRound> {
 public:
  struct Call {
    grpc::ClientContext context;
    tandem::v1::InfoRequest info_request;
    tandem::v1::StatsRequest stats_request;
    tandem::v1::WorkerInfo info;
    tandem::v1::WorkerStats stats;
    grpc::Status status;
    std::unique_ptr<grpc::ClientAsyncResponseReader<tandem::v1::WorkerInfo>> info_reader;
    std::unique_ptr<grpc::ClientAsyncResponseReader<tandem::v1::WorkerStats>> stats_reader;
    std::string address;
    std::string worker_id;  // empty: an Info call
    std::shared_ptr<tandem::v1::Worker::Stub> stub;
    bool first_contact = false;  // the first call on stub's channel
  };

  PollRound(Outstanding::Token out, WorkerPool* pool, uint64_t poll, uint64_t generation,
            std::vector<std::unique_ptr<Call>> calls,
            bool from_timer, std::function<void()> done)
      : out_(std::move(out)),
        pool_(pool),
        poll_(poll),
        generation_(generation),
        calls_(std::move(calls)),
        from_timer_(from_timer),
        done_(std::move(done)),
        free_slots_(std::max(pool->options_.max_polls_in_flight, 1)),
        free_first_contacts_(std::max(pool->options_.max_first_contacts, 1)) {}

  void start() {
    if (calls_.empty()) return pool_->endRound(from_timer_, done_);
    send(0, false);
  }

 private:
  // frees `slots` call slots, then (unless another thread is sending)
  // sends calls while slots are free. A call not sent because the pool
  // stopped since the round began counts as answered, without effect.
  void send(int slots, bool first_contact_done) {
    std::unique_lock lock(mu_);
    free_slots_ += slots;
    if (first_contact_done) ++free_first_contacts_;
    if (sending_) return;
    sending_ = true;
    while (Call* call = nextLocked()) {
      const bool stopped = pool_->stop_generation_.load() != generation_;
      if (stopped) {
        // not sent: its slots are free again at once.
        ++free_slots_;
        if (call->first_contact) ++free_first_contacts_;
      }
      lock.unlock();
      if (stopped) {
        answered(*call, /*sent=*/false);
      } else {
        issue(*call);
      }
      lock.lock();
    }
    sending_ = false;
  }

  // mu_ held. The next call a free slot allows (taking the slot), or null.
  // Calls on connected channels go first, first contacts as their own
  // slots allow.
  Call* nextLocked() {
    if (free_slots_ == 0) return nullptr;
    while (next_ < calls_.size() && calls_[next_]->first_contact) ++next_;
    if (next_ < calls_.size()) {
      --free_slots_;
      return calls_[next_++].get();
    }
    while (next_first_ < calls_.size() && !calls_[next_first_]->first_contact) ++next_first_;
    if (next_first_ < calls_.size() && free_first_contacts_ > 0) {
      --free_slots_;
      --free_first_contacts_;
      return calls_[next_first_++].get();
    }
    return nullptr;
  }

  void issue(Call& call) {
    call.context.set_deadline(std::chrono::system_clock::now() + pool_->options_.rpc_deadline);
    grpc::CompletionQueue* queue = pool_->calls_.queue();
    auto self = shared_from_this();
    if (call.worker_id.empty()) {
      pool_->calls_.start(
          [self, &call](bool) {
            self->pool_->onInfo(call.address, self->poll_, call.status.ok(), call.info);
            self->answered(call, true);
          },
          [&call, queue](void* tag) {
            call.info_reader = call.stub->PrepareAsyncInfo(&call.context, call.info_request, queue);
            call.info_reader->StartCall();
            call.info_reader->Finish(&call.info, &call.status, tag);
          });
    } else {
      pool_->calls_.start(
          [self, &call](bool) {
            self->pool_->onStats(call.address, self->poll_, call.worker_id, call.status.ok(),
                                 call.stats);
            self->answered(call, true);
          },
          [&call, queue](void* tag) {
            call.stats_reader = call.stub->PrepareAsyncStats(&call.context, call.stats_request, queue);
            call.stats_reader->StartCall();
            call.stats_reader->Finish(&call.stats, &call.status, tag);
          });
    }
  }

  // one call done: the round ends after the last, else its slot goes on.
  void answered(const Call& call, bool sent) {
    bool last = false;
    {
      std::lock_guard lock(mu_);
      last = ++answered_ == calls_.size();
    }
    if (last) {
      pool_->endRound(from_timer_, done_);
    } else if (sent) {
      send(1, call.first_contact);
    }
  }

  // first, so destroyed last: the pool counts the round out until its
  // calls (contexts, stub references) are gone.
  const Outstanding::Token out_;
  WorkerPool* const pool_;
  const uint64_t poll_;
  const uint64_t generation_;  // pool_->stop_generation_ when the round began
  const std::vector<std::unique_ptr<Call>> calls_;
  const bool from_timer_;
  const std::function<void()> done_;
  std::mutex mu_;
  int free_slots_;           // guarded by mu_
  int free_first_contacts_;  // guarded by mu_
  size_t next_ = 0;          // where the next call on a connected channel is sought; guarded by mu_
  size_t next_first_ = 0;    // where the next first contact is sought; guarded by mu_
  size_t answered_ = 0;    // guarded by mu_
  bool sending_ = false;   // a thread is in send()'s loop; guarded by mu_
};

void WorkerPool::startRound(bool from_timer, std::function<void()> done) {
  std::vector<std::unique_ptr<PollRound::Call>> calls;
  uint64_t poll = 0;
  Outstanding::Token out;
  {
    std::lock_guard lock(mu_);
    if (from_timer) {
      // the poller's previous round is still out (a worker slow to answer):
      // this tick is skipped, not stacked on it.
      if (timer_round_out_) return;
      timer_round_out_ = true;
    }
    poll = ++polls_;
    out = rounds_out_.take();  // out from before the round exists
    calls.reserve(workers_.size());
    for (auto& [address, e] : workers_) {
      PollRound::Call& call = *calls.emplace_back(std::make_unique<PollRound::Call>());
      call.address = address;
      if (e.state.has_info) call.worker_id = e.state.info.worker_id();
      call.stub = currentStubLocked(e);
      call.first_contact = !e.contacted;
      e.contacted = true;
    }
  }
  std::make_shared<PollRound>(std::move(out), this, poll, stop_generation_.load(), std::move(calls),
                              from_timer, std::move(done))
      ->start();
}

void WorkerPool::endRound(bool from_timer, const std::function<void()>& done) {
  {
    std::lock_guard lock(mu_);
    dropStaleLocked();
    publishMetricsLocked();
    if (from_timer) timer_round_out_ = false;
  }
  if (done) done();
}

void WorkerPool::pollOnce() {
  struct Latch {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
  };
  auto latch = std::make_shared<Latch>();
  startRound(/*from_timer=*/false, [latch] {
    std::lock_guard lock(latch->mu);
    latch->done = true;
    latch->cv.notify_all();
  });
  std::unique_lock lock(latch->mu);
  latch->cv.wait(lock, [&] { return latch->done; });
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
