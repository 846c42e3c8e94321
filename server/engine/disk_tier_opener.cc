#include "server/engine/disk_tier_opener.h"

#include "absl/status/status.h"

namespace tandem::engine {

// the integration of kvcache::DiskTier goes here: map request.options onto
// DiskTierOptions (dir, capacity_bytes, io, queue_depth, min_hits,
// block_bytes, fingerprint with weights_id), call DiskTier::open and return
// the tier with its ioModeName() and recovered().
absl::StatusOr<OpenedDiskTier> openDiskTier(const DiskTierRequest& request) {
  (void)request;
  return absl::FailedPreconditionError(
      "--kv-disk-path: the disk tier is not linked in this build");
}

}  // namespace tandem::engine
