// A KV block record read back from the disk tier (kvcache/tiers/disk_record.h):
// the header page checked (magic, version, sizes, header checksum, model
// fingerprint) and, when it names this model and size, the payload verified
// against its checksum. Disks corrupt and files get swapped: nothing in a
// page may be trusted before the checks pass.
// Input: byte 0 = flags (bit 0: fix up the header checksum so the checks
// behind it are reached; bit 1: expect the digest and size the header
// names), then the header page (zero-padded to 4 KiB), then the payload.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include <xxhash.h>

#include "kvcache/tiers/disk_record.h"

namespace kv = tandem::kvcache;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t flags = data[0];
  ++data;
  --size;
  std::vector<std::byte> page(kv::kRecordHeaderBytes);
  const size_t head = std::min(size, page.size());
  std::memcpy(page.data(), data, head);
  std::span<const std::byte> payload(reinterpret_cast<const std::byte*>(data) + head, size - head);
  uint64_t digest = 0x1234, payload_bytes = payload.size();
  if (flags & 1) {
    // the header checksum as encodeRecordHeader writes it (disk_record.cc:
    // XXH3 of bytes [0, 128) with the seed "tandemg3").
    const uint64_t sum = XXH3_64bits_withSeed(page.data(), 128, 0x74616e64656d6733ULL);
    std::memcpy(page.data() + 128, &sum, 8);
  }
  if (flags & 2) {
    std::memcpy(&digest, page.data() + 40, 8);
    std::memcpy(&payload_bytes, page.data() + 48, 8);
  }
  kv::RecordHeader header;
  kv::HeaderCheck check = kv::decodeRecordHeader(page, digest, payload_bytes, &header);
  if (check == kv::HeaderCheck::kValid) {
    if (header.payload_bytes != payload_bytes || header.fingerprint_digest != digest) __builtin_trap();
    if (header.payload_bytes <= payload.size()) {
      (void)(kv::payloadChecksum(payload.first(header.payload_bytes)) == header.payload_checksum);
    }
  }
  return 0;
}
