// The one place where the engine opens its G3 disk tier (--kv-disk-path).
// kvcache::DiskTier over DIR/kv-g3.blocks; a tier that cannot use its disk
// (missing directory, full disk) opens disabled and serving goes on.
#pragma once

#include "absl/status/statusor.h"
#include "server/engine/kv_tier_options.h"

namespace tandem::engine {

// opens G3 as `request` describes. InvalidArgument for options DiskTier
// refuses (a bad --kv-disk-io, a capacity below one record).
absl::StatusOr<OpenedDiskTier> openDiskTier(const DiskTierRequest& request);

}  // namespace tandem::engine
