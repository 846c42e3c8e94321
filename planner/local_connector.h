// Connector `local`: `tandem worker` processes on this machine, children of
// a process::Supervisor (the one of `tandem serve --autoscale`, or its own
// for `tandem planner run --connector local`). A new worker registers with
// the router (router_address, the router's internal port) and is routed to
// once it answers; the supervisor restarts one that crashes.
//
// Scale-down drains (the contract of planner/connector.h): the newest
// workers of the role get SIGTERM at once, and each then, on its own
// (server/worker/worker.h, Worker::beginDrain): tells the router it drains,
// so the router routes nothing new to it and no longer counts it as
// capacity (a request planned for it just before is still served); turns
// its health NOT_SERVING; finishes the streams it has (no migration); once
// idle, or at its --drain-timeout (the router then migrates the streams
// left to another worker, so no request is lost), leaves routing and
// exits. The supervisor SIGKILLs one that is still alive
// drain_timeout + 5 s after its SIGTERM. scale() returns once the signals
// are sent; the drains go on on threads of their own.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "common/process/supervisor.h"
#include "planner/connector.h"

namespace tandem::planner {

struct LocalConnectorOptions {
  std::string tandem_binary;    // the `tandem` executable
  std::string router_address;   // the router's internal HOST:PORT (registry)
  std::string model;            // --model of every worker
  std::string listen_host = "127.0.0.1";
  // further `tandem worker` flags for every worker (engine flags, ...).
  std::vector<std::string> worker_flags;
  // "NAME=value" entries the workers get on top of this process's
  // environment (TANDEM_CLUSTER_SECRET: never on a command line).
  std::vector<std::string> env;
  // each worker gets its own subdirectory of it (role-index); "" = no G3.
  std::string kv_disk_path;
  // the workers' --drain-timeout.
  std::chrono::milliseconds drain_timeout{30000};
};

class LocalConnector : public Connector {
 public:
  // `supervisor` (may be null: the connector makes its own, which stops
  // every worker when the connector is destroyed) must outlive the
  // connector. InvalidArgument without a binary, a router address or a model.
  static absl::StatusOr<std::unique_ptr<LocalConnector>> create(LocalConnectorOptions options,
                                                                process::Supervisor* supervisor = nullptr);
  // waits for the drains in progress.
  ~LocalConnector() override;

  // Connector
  const char* name() const override { return "local"; }
  // the workers started and not draining, per role.
  absl::StatusOr<RoleCounts> current() override;
  // starts workers (FailedPrecondition when one cannot be started: the
  // ones started before it stay), or drains the newest ones.
  absl::Status scale(Role role, int target) override;

  // workers whose drain has not ended (tests).
  int draining() const;
  // the supervisor's names of the live workers of `role`, oldest first.
  std::vector<std::string> workerNames(Role role) const;

 private:
  LocalConnector(LocalConnectorOptions options, process::Supervisor* supervisor, process::SupervisorPtr own);
  std::vector<std::string> workerArgv(Role role, int index) const;
  void drain(const std::string& name);

  const LocalConnectorOptions options_;
  process::SupervisorPtr own_supervisor_;
  process::Supervisor* supervisor_;
  mutable std::mutex mu_;
  std::map<Role, std::vector<std::string>> live_;  // guarded by mu_; oldest first
  std::map<Role, int> next_index_;                 // guarded by mu_
  int draining_ = 0;                               // guarded by mu_
  struct Drain {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::vector<Drain> drains_;  // guarded by mu_; finished ones joined at the next scale()
};

}  // namespace tandem::planner
