#include "server/engine/disk_tier_opener.h"

#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/status.h"
#include "kvcache/tiers/disk_tier.h"

namespace tandem::engine {

absl::StatusOr<OpenedDiskTier> openDiskTier(const DiskTierRequest& request) {
  const KvTierOptions& t = request.options;
  kvcache::DiskTierOptions options;
  options.dir = t.disk_path;
  options.capacity_bytes = t.disk_bytes;
  if (t.disk_io == "uring") {
    options.io = kvcache::DiskIoMode::kUring;
  } else if (t.disk_io == "threads") {
    options.io = kvcache::DiskIoMode::kThreads;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--kv-disk-io: '", t.disk_io, "' is not uring or threads"));
  }
  options.queue_depth = t.disk_queue_depth;
  options.min_hits = t.disk_min_hits;
  options.block_bytes = request.block_bytes;
  options.fingerprint = request.fingerprint;
  // a worker restarted after a SIGKILL: the dead one's ring lets go of the
  // file (and its lock) shortly after it exits.
  options.lock_wait = absl::Seconds(10);
  ASSIGN_OR_RETURN(std::unique_ptr<kvcache::DiskTier> disk, kvcache::DiskTier::open(options));
  OpenedDiskTier opened;
  if (disk->disabled()) {
    // serving goes on without G3; the metrics say so (io mode "disabled").
    std::fprintf(stderr, "kv disk tier: disabled: %s\n", disk->disabledReason().c_str());
    opened.io_mode = "disabled";
  } else {
    opened.io_mode = std::string(disk->ioModeName());
    opened.recovered = disk->recovered();
    std::fprintf(stderr, "kv disk tier: %s, %lld blocks of %zu bytes (%s), %zu found on disk\n",
                 disk->path().c_str(), static_cast<long long>(disk->capacityBlocks()),
                 request.block_bytes, opened.io_mode.c_str(), opened.recovered.size());
  }
  opened.tier = std::move(disk);
  return opened;
}

}  // namespace tandem::engine
