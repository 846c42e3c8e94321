// The one place where the engine opens its G3 disk tier (--kv-disk-path).
// The disk tier (kvcache/disk_tier.h, DiskTier::open) is built beside this
// one; until it is linked in, asking for G3 is an error at start.
#pragma once

#include "absl/status/statusor.h"
#include "server/engine/kv_tier_options.h"

namespace tandem::engine {

// opens G3 as `request` describes. FailedPrecondition while the disk tier
// is not linked into this build.
absl::StatusOr<OpenedDiskTier> openDiskTier(const DiskTierRequest& request);

}  // namespace tandem::engine
