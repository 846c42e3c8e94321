// Finds workers by address, for routers whose workers do not register (or
// to know them before they do): a static list, a file of host:port lines
// (re-read every file_interval; blank lines and # comments are skipped)
// and a DNS name whose every address is a worker (resolved every
// dns_interval). What each source lists goes to WorkerPool::setDiscovered;
// the pool learns the rest through Worker.Info.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
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

  // lists the static workers and starts watching the file and DNS (a
  // thread, only when either is set). InvalidArgument for a malformed
  // --workers-dns.
  absl::Status start();
  void stop();

 private:
  void run();
  void refreshFile();
  void refreshDns();

  const WorkerDiscoveryOptions options_;
  WorkerPool* pool_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace tandem::router::cluster
