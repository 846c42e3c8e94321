// generation::Generator on worker processes (disaggregated serving): each request
// goes to a decode worker D chosen by the RoutePlanner (which also decides
// whether a prefill worker P prefills it) through Worker.Generate, and its
// tokens come back as EngineOutputs. When D's stream breaks before its
// final message (D died, became unhealthy, gave up) the request migrates:
// prompt ‖ tokens delivered go to another D for the remaining max_tokens,
// and the client's stream continues without a duplicate or missing token.
// With no decode worker available a request waits up to
// no_worker_timeout before failing with kError. A request the planner
// sheds (no worker meets the TTFT SLO) is refused at submit with
// ResourceExhausted (429 with Retry-After at the front ends); once accepted
// a request is never shed (its migrations go on past the SLO). Each decision
// is counted in the cluster metrics (policy, outcome, predicted cached
// tokens); each attempt's first token and end teach the planner's load
// model. Retries and the watchdog run on this generator's own TimerQueue.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/timer_queue.h"
#include "generation/generator.h"
#include "router/cluster/cluster_metrics.h"
#include "router/cluster/kv_index.h"
#include "router/cluster/remote_request.h"
#include "router/cluster/route_planner.h"
#include "router/cluster/worker_pool.h"

namespace tandem::router::cluster {

struct RemoteGeneratorOptions {
  RoutePlannerOptions planner;
  std::chrono::milliseconds no_worker_timeout{30000};
  std::chrono::milliseconds retry_delay{100};
  // attempts of one request (the first plus its migrations) before kError.
  int max_attempts = 16;
  // how often streams on workers the pool found unhealthy are abandoned.
  std::chrono::milliseconds watchdog_interval{100};
};

class RemoteGenerator : public generation::Generator {
 public:
  // all must outlive the generator; `index` and `metrics` may be null.
  RemoteGenerator(RemoteGeneratorOptions options, WorkerPool* pool, const KvIndex* index,
                ClusterMetrics* metrics);
  ~RemoteGenerator() override;

  // generation::Generator
  absl::StatusOr<generation::RequestId> submit(std::vector<int32_t> prompt, generation::SamplingParams params,
                                   OutputCallback callback) override;
  void cancel(generation::RequestId id) override;
  bool ready() const override;
  generation::GeneratorLoad load() const override;
  // the routable decode workers' (the smallest context and vocabulary, the
  // largest cache); all 0 while there is none.
  generation::RequestLimits limits() const override;

  // ends every request (kAbort), waits for their calls, and refuses new ones.
  void stop();
  // requests not finished yet.
  int numInFlight() const;
  // prefix of the ids sent to workers (unique per router process).
  const std::string& wirePrefix() const { return wire_prefix_; }

 private:
  friend class RemoteRequest;
  using Clock = std::chrono::steady_clock;

  // plans and starts the request's next attempt, or schedules a retry, or
  // fails it (no call in flight). With `may_refuse` (the first attempt, in
  // submit) a request the planner sheds returns ResourceExhausted and is
  // left to the caller; later ones (migrations, retries: the request was
  // accepted) are planned past the TTFT SLO and never shed.
  absl::Status attempt(const RemoteRequestPtr& request, bool may_refuse);
  // runs attempt(request) on the timer thread at `when`.
  void schedule(const RemoteRequestPtr& request, Clock::time_point when);
  // ends the requests still scheduled (kAbort); the timers are stopped.
  void abortWaiting();
  void abandonUnhealthy();
  // from RemoteRequest: a call started / ended on `address`.
  void callStarted(const std::string& address);
  void callEnded(const std::string& address);
  // from RemoteRequest: the attempt planned with `key` got its first
  // token / ended after `output_tokens` tokens.
  void routeFirstToken(uint64_t key);
  void routeEnded(uint64_t key, int64_t output_tokens);
  // from RemoteRequest: the call ended without a final message.
  void retryAfterBrokenCall(const RemoteRequestPtr& request, const grpc::Status& status,
                            const std::string& address, bool delivered_any);
  void requestDone(generation::RequestId id);

  const RemoteGeneratorOptions options_;
  WorkerPool* pool_;
  ClusterMetrics* metrics_;
  RoutePlanner planner_;
  const std::string wire_prefix_;
  std::atomic<generation::RequestId> next_id_{1};
  std::atomic<uint64_t> next_route_key_{1};

  mutable std::mutex mu_;
  std::unordered_map<generation::RequestId, RemoteRequestPtr> requests_;  // guarded by mu_
  std::map<std::string, int> in_flight_;                 // calls per address; guarded by mu_
  int live_calls_ = 0;                                   // guarded by mu_
  bool stopping_ = false;                                // guarded by mu_
  std::condition_variable calls_cv_;

  // scheduled attempts not yet run, by schedule() order; guarded by mu_
  std::map<uint64_t, RemoteRequestPtr> waiting_;
  uint64_t next_wait_ = 0;  // guarded by mu_
  // last: its callbacks use the members above.
  TimerQueue timers_{"remote-gen"};
};

}  // namespace tandem::router::cluster
