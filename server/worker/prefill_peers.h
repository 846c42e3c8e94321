// D's clients of prefill workers: one channel and stub per address, made on
// first use and kept (gRPC reconnects a channel by itself) until the
// cluster's TLS files are reloaded (then the next call gets a new channel
// with the new certificate); the channels carry the cluster's
// authentication.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/grpc/cluster_auth.h"
#include "tandem/v1/worker.grpc.pb.h"

namespace tandem::worker {

class PrefillPeers {
 public:
  explicit PrefillPeers(grpc_util::ClusterAuthPtr auth) : auth_(std::move(auth)) {}

  // the stub for `address` (host:port). Never null; thread-safe. It stays
  // valid while this object lives (a stub replaced after a reload is kept).
  tandem::v1::Worker::Stub* stub(const std::string& address);

 private:
  const grpc_util::ClusterAuthPtr auth_;
  std::mutex mu_;
  struct Slot {
    std::unique_ptr<tandem::v1::Worker::Stub> stub;
    uint64_t tls_generation = 0;  // auth_->tlsGeneration() when it was made
  };
  absl::flat_hash_map<std::string, Slot> stubs_;
  // stubs replaced after a reload (one per peer and reload): callers may
  // still hold their pointers.
  std::vector<std::unique_ptr<tandem::v1::Worker::Stub>> retired_;
};

}  // namespace tandem::worker
