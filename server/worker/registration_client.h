// Keeps a worker registered with its router: Registry.Register(WorkerInfo)
// at once and then every heartbeat_interval_ms the router asks for (1 s when
// it names none or cannot be reached), so a restarted router relearns the
// worker within one interval. A reload of the cluster's TLS files (SIGHUP)
// reaches the next call: it goes out on a new channel with the new
// certificate. Failures are logged once (and the recovery), retried, and
// never fatal. drain() tells the router the worker drains; stop()
// deregisters. The heartbeat is a
// blocking call, so it runs on a TimerQueue of this client's own; the next
// one is due an interval after the previous answer.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "common/grpc/cluster_auth.h"
#include "common/timer_queue.h"
#include "tandem/v1/worker.grpc.pb.h"

namespace tandem::worker {

class RegistrationClient {
 public:
  // starts registering `info` with the Registry at `router_address` (the
  // router's internal port), authenticated by `auth`.
  RegistrationClient(std::string router_address, tandem::v1::WorkerInfo info,
                     const grpc_util::ClusterAuthPtr& auth);
  // stop()s.
  ~RegistrationClient();

  // stops the heartbeat and calls Registry.Deregister with draining (the
  // router routes nothing new here and leaves the open streams be), bounded
  // like stop(). Idempotent; nothing after stop().
  void drain();
  // stops the heartbeat and calls Registry.Deregister (bounded by a short
  // deadline; a router that cannot be reached is not waited for).
  // Idempotent.
  void stop();

  // successful Register calls so far (for tests).
  int numRegistered() const;

 private:
  // one Register call; schedules the next.
  void heartbeat();
  // one Deregister call, bounded by a short deadline.
  void deregister(bool draining);
  // a new stub when the cluster's TLS material changed since the last one
  // was made (heartbeat thread, or stop() once the heartbeat is over).
  void refreshStub();

  const std::string router_address_;
  const tandem::v1::WorkerInfo info_;
  const grpc_util::ClusterAuthPtr auth_;
  std::unique_ptr<tandem::v1::Registry::Stub> stub_;
  uint64_t stub_tls_generation_ = 0;  // auth_->tlsGeneration() when stub_ was made
  mutable std::mutex mu_;
  bool draining_ = false;   // guarded by mu_
  bool stopping_ = false;   // guarded by mu_
  int registered_ = 0;      // guarded by mu_
  bool failing_ = false;    // on the heartbeat thread only
  TimerQueue heartbeat_{"heartbeat"};  // last: its callbacks use the members above
};

}  // namespace tandem::worker
