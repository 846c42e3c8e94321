// Copying a KV block while computing its checksum, reading the source from
// memory once: the block is copied in cache-sized slices and each slice is
// hashed right after it was copied, while it is still in cache.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tandem::kv_transport {

// how many bytes are copied, then hashed, at a time: fits L1/L2 with room.
inline constexpr size_t kCopySliceBytes = 64 << 10;

// copies `bytes` bytes from `src` to `dst` (not overlapping) and returns
// blockChecksum(src, bytes). Large copies use non-temporal stores where the
// CPU has them (the destination is read next by another process, not by
// this core), so the copy does not first read the destination's lines; the
// stores are fenced before returning, so another process that learns of the
// copy afterwards sees every byte.
uint64_t copyWithChecksum(void* dst, const void* src, size_t bytes);

// copies `bytes` bytes with non-temporal stores where possible (plain memcpy
// otherwise) and fences them. Exposed for the benchmark and tests.
void streamingCopy(void* dst, const void* src, size_t bytes);

}  // namespace tandem::kv_transport
