// The workers the router knows, where it learned of each (registration, the
// static list, the workers file, DNS), what each is (WorkerInfo) and how it
// is doing (health, last WorkerStats).
//
// A poll timer (its own TimerQueue) starts a round every poll_interval:
// Worker.Info to workers it knows only by address, Worker.Stats to the
// others (deadline rpc_deadline), asynchronous calls, at most
// max_polls_in_flight out at once, their answers applied on the pool's one
// completion thread (common/grpc/completion_thread.h, which the KV
// subscriber's calls share); no thread waits for a round, so the pool's
// threads do not grow with its workers. A tick while the previous round is
// out is skipped.
// failures_to_unhealthy consecutive failures make a worker unhealthy (it is
// not routed to); one success makes it healthy again. A worker known only
// by registration that stays unhealthy for drop_after is dropped; listed or
// discovered ones stay and come back when they answer again. A
// registration from a known address with a new worker_id replaces the
// entry (a restarted worker).
//
// A draining worker (Deregister with draining, or Stats saying so: a
// scale-down) stays in the pool, healthy, while it answers: nothing new is
// routed to it (routable() is false), it counts as state="draining" and
// not in the role gauges (the planner's capacity), and the streams it has
// are left to finish there. It leaves with its final Deregister, or turns
// unhealthy (dead, or past its drain deadline: Stats UNAVAILABLE) and then
// its streams migrate. One that discovery no longer lists (a pod whose
// readiness failed) is kept while it drains and answers.
//
// What workers report is checked (worker_report_check.h): a bad WorkerInfo
// is refused, bad WorkerStats count as a failed poll. Once the router
// serves a model (setModelName), a worker of another model is refused.
// Every channel to a worker is made by options.auth (the cluster secret
// and TLS).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/grpc/cluster_auth.h"
#include "common/grpc/completion_thread.h"
#include "common/outstanding.h"
#include "common/timer_queue.h"
#include "router/cluster/cluster_metrics.h"
#include "tandem/v1/worker.grpc.pb.h"

namespace tandem::router::cluster {

// where the router learned of a worker (bits: one address may come from several).
enum WorkerSource : uint32_t {
  kRegistered = 1,
  kStaticList = 2,
  kWorkersFile = 4,
  kDns = 8,
};

struct WorkerPoolOptions {
  std::chrono::milliseconds poll_interval{250};
  std::chrono::milliseconds rpc_deadline{1000};
  int failures_to_unhealthy = 3;
  // the most Info/Stats calls of one round out at once: a pool of many
  // workers is polled in waves, never a burst of a call per worker.
  int max_polls_in_flight = 64;
  // of those, the most to workers the pool never called on their channel
  // yet: a burst of new connections (a router starting beside many
  // workers) is opened a few at a time. gRPC 1.51 queues each connection's
  // completion on its default executor, which adds a thread whenever three
  // wait and never gives one back: 17 connections at once took it from 1 to
  // 4 threads, two at a time kept it at 1 (tests/cli/serve_threads_test.cc).
  int max_first_contacts = 2;
  std::chrono::milliseconds drop_after{10000};
  // what Register answers: how often a worker registers again.
  int heartbeat_interval_ms = 2000;
  // how calls to workers authenticate (channels carry the secret, TLS).
  grpc_util::ClusterAuthPtr auth = grpc_util::ClusterAuth::none();
};

// one worker as the pool saw it at a moment (a copy).
struct WorkerState {
  std::string address;
  uint32_t sources = 0;
  bool has_info = false;  // info is valid (registered, or Worker.Info answered)
  tandem::v1::WorkerInfo info;
  bool healthy = false;
  bool has_stats = false;
  tandem::v1::WorkerStats stats;
  // leaving: finishes its streams, takes no new request (see WorkerPool).
  bool draining = false;

  // a new request may go here.
  bool routable() const { return healthy && has_info && !draining; }

  bool decodeCapable() const {
    return info.role() == tandem::v1::WORKER_ROLE_DECODE || info.role() == tandem::v1::WORKER_ROLE_BOTH;
  }
  bool prefillOnly() const { return info.role() == tandem::v1::WORKER_ROLE_PREFILL; }
};

class WorkerPool {
 public:
  // `metrics` may be null; else it must outlive the pool.
  WorkerPool(WorkerPoolOptions options, ClusterMetrics* metrics);
  ~WorkerPool();

  // where the worker gauges go from now on (the registry may exist only
  // after the gRPC server hosting the Registry service started).
  void setMetrics(ClusterMetrics* metrics);

  // starts polling (a first round at once, then every poll_interval on
  // that grid) / stops it; stop() returns after the rounds in progress
  // ended (they send no more calls; those out end within rpc_deadline).
  // start() after stop() polls again.
  void start();
  void stop();

  // Registry.Register: adds or refreshes the worker at info.address (healthy
  // at once: it just called). InvalidArgument for an info checkWorkerInfo
  // refuses, FailedPrecondition for a worker of another model than the
  // one set by setModelName; either changes nothing.
  absl::Status registerWorker(const tandem::v1::WorkerInfo& info);
  // the model the router serves (WorkerInfo.model_name of the worker it
  // learned it from): from now on workers reporting another model are
  // refused (registration) or never healthy (polled ones), and those
  // already known with another one are dropped (registered only) or turn
  // unhealthy (listed or discovered).
  void setModelName(const std::string& model_name);
  // Registry.Deregister. `draining`: the worker begins to drain (kept,
  // not routed to). Else it leaves now: dropped unless it is also listed
  // or discovered, in which case it turns unhealthy.
  void deregisterWorker(const std::string& worker_id, bool draining = false);
  // the addresses `source` (kStaticList, kWorkersFile or kDns) lists now;
  // replaces what it listed before.
  void setDiscovered(WorkerSource source, const std::vector<std::string>& addresses);

  std::vector<WorkerState> snapshot() const;
  // the stub for calls to the worker at `address` (one channel per address,
  // kept while the pool knows it, replaced by a new one after the cluster's
  // TLS files were reloaded).
  std::shared_ptr<tandem::v1::Worker::Stub> stub(const std::string& address);
  // marks the worker unhealthy now (a call to it failed in a way that says
  // it is gone); the next successful poll makes it healthy again.
  void reportFailure(const std::string& address);

  const WorkerPoolOptions& options() const { return options_; }
  // the thread the pool's calls to workers complete on; the router's other
  // background calls to them (the KV subscriber's) complete there too, and
  // end before the pool is destroyed.
  grpc_util::CompletionThread& calls() { return calls_; }
  // polls every worker once now and waits for the answers (tests, startup).
  void pollOnce();

 private:
  class PollRound;
  struct Entry {
    WorkerState state;
    int failures = 0;
    std::chrono::steady_clock::time_point unhealthy_since;
    std::shared_ptr<tandem::v1::Worker::Stub> stub;
    uint64_t stub_tls_generation = 0;  // options_.auth->tlsGeneration() when stub was made
    bool contacted = false;  // a poll was sent on stub's channel
    // the poll whose answer was last applied: an answer from an older poll
    // that arrives later (pollOnce runs on the poller and on demand) is stale.
    uint64_t answered_poll = 0;
  };

  // a stub over a new channel to `address` (options_.auth).
  std::shared_ptr<tandem::v1::Worker::Stub> newStub(const std::string& address) const;
  // mu_ held. OK or FailedPrecondition: `info` is of another model than model_name_.
  absl::Status checkModelLocked(const tandem::v1::WorkerInfo& info) const;
  // mu_ held.
  Entry& entryLocked(const std::string& address);
  // mu_ held. e.stub, made anew when the cluster's TLS material changed.
  const std::shared_ptr<tandem::v1::Worker::Stub>& currentStubLocked(Entry& e);
  void setHealthyLocked(Entry& e, bool healthy);
  void dropStaleLocked();
  void publishMetricsLocked();
  // mu_ held. False when an answer from a poll after `poll` was applied to e.
  static bool takeAnswerLocked(Entry& e, uint64_t poll);
  // polls every worker known now (PollRound); `done` runs once its last
  // answer was applied. A round of the poller's (`from_timer`) is skipped
  // while its previous one is out.
  void startRound(bool from_timer, std::function<void()> done);
  // from the round: drops stale workers, publishes the gauges, then runs
  // `done`.
  void endRound(bool from_timer, const std::function<void()>& done);
  void onInfo(const std::string& address, uint64_t poll, bool ok, const tandem::v1::WorkerInfo& info);
  void onStats(const std::string& address, uint64_t poll, const std::string& worker_id, bool ok,
               const tandem::v1::WorkerStats& stats);

  const WorkerPoolOptions options_;
  ClusterMetrics* metrics_;  // guarded by mu_
  mutable std::mutex mu_;
  std::map<std::string, Entry> workers_;  // by address; guarded by mu_
  std::unique_ptr<TimerQueue> poller_;    // while started; guarded by mu_
  std::string model_name_;                // "" until setModelName; guarded by mu_
  uint64_t polls_ = 0;                    // rounds begun; guarded by mu_
  bool timer_round_out_ = false;          // the poller's round is out; guarded by mu_
  // rounds not destroyed: stop() returns only once no gRPC object of a round
  // is left to a gRPC thread to destroy.
  Outstanding rounds_out_;
  // stop() calls so far: a round begun before the latest sends no more calls.
  std::atomic<uint64_t> stop_generation_{0};
  // last, so destroyed first: once stop() returned, no call of the pool's
  // is pending on it.
  grpc_util::CompletionThread calls_{"pool-calls"};
};

}  // namespace tandem::router::cluster
