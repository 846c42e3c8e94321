// Finds workers by address, for routers whose workers do not register (or
// to know them before they do): a static list, a file of host:port lines
// (re-read every file_interval; blank lines and # comments are skipped)
// and a DNS name whose every address is a worker (resolved every
// dns_interval). What each source lists goes to WorkerPool::setDiscovered;
// the pool learns the rest through Worker.Info. The file and the name are
// refreshed on a TimerQueue of this object's own (a DNS lookup blocks).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/timer_queue.h"
#include "router/cluster/worker_pool.h"

namespace tandem::router::cluster {

struct WorkerDiscoveryOptions {
  std::vector<std::string> static_workers;  // host:port each
  std::string workers_file;                 // "" = none
  std::string workers_dns;                  // NAME:PORT, "" = none
  std::chrono::milliseconds file_interval{2000};
  std::chrono::milliseconds dns_interval{5000};
};

// the host:port lines of a workers file. NotFound when it cannot be read.
absl::StatusOr<std::vector<std::string>> readWorkersFile(const std::string& path);
// every address NAME resolves to, as "ip:PORT" ("[ip6]:PORT"), in the
// resolver's order without repeats. InvalidArgument for a spec without a
// port, NotFound when the name does not resolve.
absl::StatusOr<std::vector<std::string>> resolveWorkersDns(const std::string& name_port);

class WorkerDiscovery {
 public:
  // `pool` must outlive this object.
  WorkerDiscovery(WorkerDiscoveryOptions options, WorkerPool* pool);
  ~WorkerDiscovery();

  // lists the static workers, reads the file and resolves the name once,
  // and starts refreshing them every file_interval / dns_interval (a timer
  // thread, only when either is set). InvalidArgument for a malformed
  // --workers-dns. Call once.
  absl::Status start();
  // stops refreshing; returns after a refresh in progress ended.
  void stop();

 private:
  void refreshFile();
  void refreshDns();

  const WorkerDiscoveryOptions options_;
  WorkerPool* pool_;
  std::unique_ptr<TimerQueue> refresher_;  // set by start(), stopped by stop()
};

}  // namespace tandem::router::cluster
