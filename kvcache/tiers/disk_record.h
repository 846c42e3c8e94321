// The on-disk record of one KV block in G3 (kvcache/tiers/disk_tier.h): a 4 KiB
// header page, then the payload, padded with zeros to a 4 KiB multiple so
// every record starts and ends on an O_DIRECT boundary.
//
//   offset  size  field (little-endian)
//        0     8  magic "TNDMKVG3"
//        8     4  format version (kRecordFormatVersion)
//       12     4  header bytes (4096)
//       16     8  sequence: grows with every write of the tier (newest wins)
//       24     8  block hash (chained, kvcache/prefix_hash.h)
//       32     8  parent hash
//       40     8  model fingerprint digest (ModelFingerprint::digest)
//       48     8  payload bytes
//       56     8  payload checksum: XXH3_64 of the payload bytes
//       64    16  num_layers, num_kv_heads, head_dim, block_size (u32 each)
//       80     1  dtype (common/dtype.h), then 7 zero bytes
//       88     8  weights id
//       96    32  architecture, NUL-padded (truncated to 32 bytes)
//      128     8  header checksum: XXH3_64 of bytes [0, 128)
//      136  3960  zero
//     4096     n  payload, then zeros up to the next 4 KiB multiple
//
// A record is written with ONE write of header + payload. A write torn by a
// crash (any mix of old and new sectors) fails the header checksum or the
// payload checksum unless it is exactly the old record or exactly the new
// one, each of which is correct data for the hash its header names: the
// bytes are addressed by (chained hash, model fingerprint), so a stale but
// intact record is still right for its hash. That is why a removed block's
// header is left on disk (a restart may find and republish it: still right),
// and why no write ordering or fsync is needed for correctness.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kvcache/tiers/model_fingerprint.h"
#include "kvcache/prefix_hash.h"

namespace tandem::kvcache {

inline constexpr size_t kRecordAlign = 4096;
inline constexpr size_t kRecordHeaderBytes = 4096;
inline constexpr uint32_t kRecordFormatVersion = 1;

// bytes of one record carrying `payload_bytes` of block.
inline size_t recordBytesFor(size_t payload_bytes) {
  return kRecordHeaderBytes + (payload_bytes + kRecordAlign - 1) / kRecordAlign * kRecordAlign;
}

struct RecordHeader {
  uint64_t sequence = 0;
  BlockHash hash = 0;
  BlockHash parent = 0;
  uint64_t fingerprint_digest = 0;
  uint64_t payload_bytes = 0;
  uint64_t payload_checksum = 0;
};

enum class HeaderCheck {
  kValid,    // a record of this model with the expected payload size
  kBlank,    // never written (all-zero magic)
  kCorrupt,  // wrong magic, version, sizes or header checksum
  kForeign,  // intact, but written for another model fingerprint
};

// XXH3_64 of a block's bytes, as stored in the header.
uint64_t payloadChecksum(std::span<const std::byte> payload);

// copies src into dst (same size) and returns payloadChecksum(src), in one
// pass over memory: each 64 KiB chunk is hashed right after its copy, while
// it is still in cache.
uint64_t copyWithChecksum(std::span<std::byte> dst, std::span<const std::byte> src);

// writes the header page (kRecordHeaderBytes) for `header` into `page`.
void encodeRecordHeader(const RecordHeader& header, const ModelFingerprint& fingerprint,
                        std::span<std::byte> page);

// reads the header page; fills *out when it is intact (kValid or kForeign).
HeaderCheck decodeRecordHeader(std::span<const std::byte> page, uint64_t expected_digest,
                               size_t expected_payload_bytes, RecordHeader* out);

}  // namespace tandem::kvcache
