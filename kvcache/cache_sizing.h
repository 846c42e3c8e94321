// How many KV blocks a worker allocates. Like vLLM's gpu_memory_utilization,
// the cache gets a budget in bytes, either given directly or as a fraction
// of the memory the machine has available, and holds as many whole blocks
// (every layer's K and V for block_size tokens, KvLayout::blockBytes()) as
// fit in it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "kvcache/kv_layout.h"

namespace tandem::kvcache {

// whole blocks of `layout` that fit in `budget_bytes` (0 when none fit).
// layout.blockBytes() must be positive.
int64_t blocksForBudget(uint64_t budget_bytes, const KvLayout& layout);

// the bytes of one field ("MemAvailable", "MemTotal", ...) of a
// /proc/meminfo text, whose lines read "MemAvailable:   12345 kB". fails
// with NotFound when the field is missing, InvalidArgument when malformed.
absl::StatusOr<uint64_t> parseMemInfoBytes(std::string_view meminfo, std::string_view field);

// blocks of `layout` that fit in `fraction` (in (0, 1]) of the host memory
// available now: MemAvailable from `meminfo_path`, or MemFree on kernels
// older than 3.14 which lack it. available rather than total memory, so the
// model weights already mapped and other processes are left their share.
absl::StatusOr<int64_t> blocksForMemoryFraction(
    double fraction, const KvLayout& layout,
    const std::string& meminfo_path = "/proc/meminfo");

}  // namespace tandem::kvcache
