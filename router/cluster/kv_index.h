// Which worker holds which KV block: per worker (by address) the set of
// chained block hashes (kvcache/prefix_hash.h) its KV events announced, on
// any tier. Fed by KvSubscriber; asked by the route planner how much of a
// prompt a worker already holds. Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "kvcache/prefix_hash.h"
#include "tandem/v1/worker.pb.h"

namespace tandem::router::cluster {

class KvIndex {
 public:
  // replaces what the index knows of the worker at `address` with a
  // snapshot of incarnation `worker_id`.
  void applySnapshot(const std::string& address, const tandem::v1::KvSnapshotResponse& snapshot);
  // applies one event of the worker's current incarnation (ids are checked
  // by the caller).
  void applyEvent(const std::string& address, const tandem::v1::KvEvent& event);
  // forgets the worker (it left the pool).
  void removeWorker(const std::string& address);

  // the number of leading blocks of a prompt, given its chained hashes in
  // order, that the worker holds (0 for an unknown worker).
  int leadingBlocks(const std::string& address,
                    std::span<const kvcache::BlockHash> hashes) const;
  // blocks the index holds for the worker (tests, metrics).
  size_t numBlocks(const std::string& address) const;

 private:
  // hash -> bit mask of the tiers holding it.
  using BlockSet = absl::flat_hash_map<kvcache::BlockHash, uint32_t>;

  mutable std::mutex mu_;
  std::unordered_map<std::string, BlockSet> workers_;  // guarded by mu_
};

}  // namespace tandem::router::cluster
