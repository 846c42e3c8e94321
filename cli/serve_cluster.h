// `tandem serve` with worker processes: starts `tandem router` and N
// `tandem worker --role prefill` + M `tandem worker --role decode` as child
// processes of this one, supervises them (restart on crash) and stops them
// in order on SIGINT/SIGTERM: the router first (it drains the requests in
// progress), then the workers. The cluster's internal ports (the router's
// registry, the workers' APIs) listen on loopback and require a secret
// this process hands its children in the environment
// ($TANDEM_CLUSTER_SECRET), never on a command line (ps shows those).
#pragma once

#include <signal.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cli/planner_flags.h"

namespace tandem::cli {

struct ServeClusterConfig {
  std::string tandem_binary;  // this executable (process::selfExecutable())
  std::string model;          // resolved model path, given to every process
  int prefill_workers = 1;
  int decode_workers = 1;
  // what the router listens on (ports may be 0: the router's bound ports
  // are learned from its "listening on" line and kept across its restarts).
  std::string host = "127.0.0.1";
  int http_port = 8000;
  int grpc_port = 8001;
  // the cluster secret every child gets (randomClusterSecret()).
  std::string cluster_secret;
  // further `tandem router` flags (e.g. --api-key K, --drain-timeout S).
  std::vector<std::string> router_flags;
  // further `tandem worker` flags given to every worker (engine flags with
  // --threads already split, --kv-transport, ...).
  std::vector<std::string> worker_flags;
  // --kv-disk-path of the serve: each worker gets its own subdirectory
  // (prefill-0, decode-0, ...); empty = no G3.
  std::string kv_disk_path;
  double drain_timeout_s = 30;
  // --autoscale: the planner runs in this process and starts, adds and
  // drains the workers (local connector; serve_autoscale.h) within
  // planner's bounds, starting from prefill_workers/decode_workers.
  bool autoscale = false;
  PlannerFlags planner;
};

// runs until one of `stop_signals` (blocked in every thread by the caller)
// arrives, then stops everything and returns ok. Fails when a child cannot
// be started or exits before it first came up (bad flags, port in use).
absl::Status runServeCluster(const ServeClusterConfig& config, const sigset_t& stop_signals);

}  // namespace tandem::cli
