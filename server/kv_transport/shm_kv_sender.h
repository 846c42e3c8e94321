// KvSender over shared memory (same host as D): maps D's KV region once per
// receiver and copies each block straight into its destination block with
// non-temporal stores, checksumming each 64 KiB slice of the source right
// after copying it (block_copy.h), so the source is read from memory once;
// D is told every ~16 MiB and checks a sample of those blocks while the
// next ones are copied. The only copy is the block copy itself.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "server/kv_transport/kv_transport.h"
#include "server/kv_transport/shm_region.h"

namespace tandem::kv_transport {

class ShmKvSender : public KvSender {
 public:
  // InvalidArgument when block_bytes is 0.
  static absl::StatusOr<std::unique_ptr<ShmKvSender>> create(const KvSenderOptions& options);

  // KvSender
  std::string_view name() const override { return "shm"; }
  // uses the first shm:// endpoint of target.endpoint (whatever its host:
  // choosing shm only on the same host is the caller's or AutoKvSender's
  // job). Connects, claims the transfer and maps D's region: Unavailable
  // when D's socket cannot be reached, NotFound for a transfer D does not
  // expect, DeadlineExceeded when D does not answer within the timeout,
  // PermissionDenied when the socket is served by another uid than ours (or
  // options.shm_allowed_peer_uids).
  absl::StatusOr<KvSendStreamPtr> open(const TransferTarget& target) override;

 private:
  explicit ShmKvSender(const KvSenderOptions& options) : options_(options) {}

  // D's region as this process maps it: reused while D keeps the same one.
  absl::StatusOr<ShmRegionPtr> mapping(const std::string& address, uint64_t region_id, int fd,
                                       size_t bytes);

  KvSenderOptions options_;
  std::mutex mu_;
  struct Mapping {
    uint64_t region_id = 0;
    ShmRegionPtr region;
  };
  absl::flat_hash_map<std::string, Mapping> mappings_;
};

}  // namespace tandem::kv_transport
