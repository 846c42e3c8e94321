// One `tandem worker` process's serving side, as an object (the CLI wraps
// it; tests run several in one process): the engine and its loop, the KV
// transport ends its role needs (D: a memfd region holding the KV storage
// and a receiver serving gRPC and shm; P: a sender), the gRPC server
// (tandem.v1.Worker, grpc.health.v1, reflection), /metrics and /health over
// HTTP, and the registration with a router.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "common/call_executor.h"
#include "common/http/http_server.h"
#include "common/timer_queue.h"
#include "grpcpp/grpcpp.h"
#include "server/kv_transport/shm_region.h"
#include "server/worker/kv_events_feed.h"
#include "server/worker/registration_client.h"
#include "server/worker/worker_context.h"
#include "server/worker/worker_options.h"
#include "server/worker/worker_service.h"

namespace tandem::worker {

class Worker;
using WorkerPtr = std::unique_ptr<Worker>;

class Worker {
 public:
  // loads the model, starts the engine, the transport, the servers and (with
  // options.router_address) the registration. Errors: FailedPrecondition
  // when options.cluster_auth refuses options.host (an unauthenticated
  // cluster listens on loopback only), the engine's
  // (EngineAssembly::create), the transport's, Unavailable when an address
  // cannot be bound.
  static absl::StatusOr<WorkerPtr> create(const WorkerOptions& options);
  // shutdown(0).
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // who this worker is (as Worker.Info answers and Register sends).
  const tandem::v1::WorkerInfo& info() const { return context_.info; }
  // the bound gRPC port, and the HTTP one (-1 when metrics are off).
  int port() const { return port_; }
  int metricsPort() const;
  WorkerMetrics& metrics() { return metrics_; }
  engine::EngineLoop& loop() { return *loop_; }
  // null without --router.
  RegistrationClient* registration() { return registration_.get(); }

  // the first step of a planned stop (scale-down: SIGTERM, the pod's
  // preStop, POST /drain): /health turns 503, gRPC health NOT_SERVING, and
  // the router is told the worker drains (Deregister with draining; Stats
  // say draining), so it routes nothing new here and leaves the streams in
  // progress to finish here (calls that still arrive are served too). Once
  // nothing is in flight, or options.drain_timeout after the drain began,
  // the worker leaves routing: Stats UNAVAILABLE and the final Deregister
  // (the router migrates a stream still here). Idempotent; returns once
  // the router was told.
  void beginDrain();
  // after beginDrain: blocks until the worker left routing and the router
  // was told (the final Deregister returned).
  void waitLeftRouting();
  // it left routing at the drain deadline with work still here: what runs
  // is to be cut at once (shutdown with no grace), so the router migrates
  // it now rather than the streams running on here unseen.
  bool leftAtDrainDeadline() const { return left_at_deadline_.load(); }
  // requests running or waiting in the engine plus KV transfers in progress.
  int inFlight() const;

  // deregisters, turns health NOT_SERVING, lets calls in progress finish
  // until `grace` has passed, cancels the rest, and stops the engine.
  // Idempotent; not from a gRPC or HTTP thread.
  void shutdown(std::chrono::milliseconds grace);

 private:
  Worker() = default;
  // start's steps, in order: the engine (and D's shared KV storage), the KV
  // receiver (D) and sender (P), the gRPC and metrics servers, then the
  // WorkerInfo the worker registers with.
  absl::Status start(const WorkerOptions& options);
  absl::Status startEngine(const WorkerOptions& options);
  // with KV in device memory: the pinned pools transfers stage through.
  absl::Status startStaging(const WorkerOptions& options, const engine::EngineAssembly& local);
  absl::Status startTransport(const WorkerOptions& options, const std::string& advertise);
  absl::Status startServers(const WorkerOptions& options, const std::string& advertise);
  void describeSelf(const WorkerOptions& options, const std::string& advertise);
  // on drain_timer_: leaves routing once idle or past drain_deadline_.
  void checkDrain();
  // Stats UNAVAILABLE, the final Deregister; wakes waitLeftRouting.
  void leaveRouting(const char* why);
  // wakes waitLeftRouting (after the final Deregister).
  void tellLeftRouting();

  WorkerContext context_;
  WorkerMetrics metrics_;
  std::unique_ptr<PrefillPeers> peers_;
  std::atomic<bool> draining_{false};
  std::atomic<bool> left_at_deadline_{false};
  kv_transport::ShmRegionPtr region_;
  std::unique_ptr<engine::EngineLoop> loop_;
  // (after the loop, whose runner they copy from; before the receiver,
  // whose storage the receiving one is)
  engine::KvStagingPtr send_staging_;
  engine::KvStagingPtr receive_staging_;
  std::unique_ptr<CallExecutor> executor_;
  std::unique_ptr<KvEventsFeed> kv_events_feed_;
  kv_transport::KvReceiverPtr receiver_;
  kv_transport::KvSenderPtr sender_;
  std::unique_ptr<WorkerService> service_;
  std::unique_ptr<grpc::Server> server_;
  http::HttpServerPtr http_;
  std::unique_ptr<RegistrationClient> registration_;
  int port_ = 0;
  int num_blocks_ = 0;
  int max_model_len_ = 0;
  std::string metrics_url_;  // "" without a metrics port
  std::mutex drain_mu_;  // one beginDrain at a time
  std::chrono::steady_clock::time_point drain_deadline_;  // set by beginDrain
  std::mutex left_mu_;
  std::condition_variable left_cv_;
  // the final Deregister returned (left_routing alone is set before it, so
  // that no new call is served while it is on its way).
  bool router_told_ = false;  // guarded by left_mu_
  // checks a draining worker (checkDrain); stopped by shutdown.
  std::unique_ptr<TimerQueue> drain_timer_;
  std::mutex shutdown_mu_;
  bool stopped_ = false;  // guarded by shutdown_mu_
};

}  // namespace tandem::worker
