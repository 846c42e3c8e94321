// D's clients of prefill workers: one channel and stub per address, made on
// first use and kept (gRPC reconnects a channel by itself); the channels
// carry the cluster's authentication.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "common/grpc/cluster_auth.h"
#include "tandem/v1/worker.grpc.pb.h"

namespace tandem::worker {

class PrefillPeers {
 public:
  explicit PrefillPeers(grpc_util::ClusterAuthPtr auth) : auth_(std::move(auth)) {}

  // the stub for `address` (host:port). Never null; thread-safe.
  tandem::v1::Worker::Stub* stub(const std::string& address);

 private:
  const grpc_util::ClusterAuthPtr auth_;
  std::mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<tandem::v1::Worker::Stub>> stubs_;
};

}  // namespace tandem::worker
