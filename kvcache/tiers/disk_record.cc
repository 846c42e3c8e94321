#include "kvcache/tiers/disk_record.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "common/status.h"

namespace tandem::kvcache {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the record layout is written with the host's byte order");

constexpr uint64_t kMagic = 0x3347564b4d444e54ULL;  // "TNDMKVG3" read little-endian
constexpr uint64_t kChecksumSeed = 0x74616e64656d6733ULL;  // "tandemg3"
constexpr size_t kChecksummedBytes = 128;
constexpr size_t kArchitectureBytes = 32;

template <typename T>
void put(std::span<std::byte> page, size_t offset, T v) {
  std::memcpy(page.data() + offset, &v, sizeof(T));
}
template <typename T>
T get(std::span<const std::byte> page, size_t offset) {
  T v;
  std::memcpy(&v, page.data() + offset, sizeof(T));
  return v;
}

}  // namespace

uint64_t payloadChecksum(std::span<const std::byte> payload) {
  return XXH3_64bits_withSeed(payload.data(), payload.size(), kChecksumSeed);
}

uint64_t copyWithChecksum(std::span<std::byte> dst, std::span<const std::byte> src) {
  TANDEM_CHECK(dst.size() == src.size());
  constexpr size_t kChunk = 64 * 1024;
  XXH3_state_t state;
  XXH3_64bits_reset_withSeed(&state, kChecksumSeed);
  for (size_t at = 0; at < src.size(); at += kChunk) {
    const size_t n = std::min(kChunk, src.size() - at);
    std::memcpy(dst.data() + at, src.data() + at, n);
    XXH3_64bits_update(&state, dst.data() + at, n);
  }
  return XXH3_64bits_digest(&state);
}

void encodeRecordHeader(const RecordHeader& header, const ModelFingerprint& fingerprint,
                        std::span<std::byte> page) {
  TANDEM_CHECK(page.size() >= kRecordHeaderBytes);
  std::memset(page.data(), 0, kRecordHeaderBytes);
  put<uint64_t>(page, 0, kMagic);
  put<uint32_t>(page, 8, kRecordFormatVersion);
  put<uint32_t>(page, 12, static_cast<uint32_t>(kRecordHeaderBytes));
  put<uint64_t>(page, 16, header.sequence);
  put<uint64_t>(page, 24, header.hash);
  put<uint64_t>(page, 32, header.parent);
  put<uint64_t>(page, 40, header.fingerprint_digest);
  put<uint64_t>(page, 48, header.payload_bytes);
  put<uint64_t>(page, 56, header.payload_checksum);
  put<uint32_t>(page, 64, static_cast<uint32_t>(fingerprint.num_layers));
  put<uint32_t>(page, 68, static_cast<uint32_t>(fingerprint.num_kv_heads));
  put<uint32_t>(page, 72, static_cast<uint32_t>(fingerprint.head_dim));
  put<uint32_t>(page, 76, static_cast<uint32_t>(fingerprint.block_size));
  put<uint8_t>(page, 80, static_cast<uint8_t>(fingerprint.dtype));
  put<uint64_t>(page, 88, fingerprint.weights_id);
  std::memcpy(page.data() + 96, fingerprint.architecture.data(),
              std::min(fingerprint.architecture.size(), kArchitectureBytes));
  put<uint64_t>(page, kChecksummedBytes,
                XXH3_64bits_withSeed(page.data(), kChecksummedBytes, kChecksumSeed));
}

HeaderCheck decodeRecordHeader(std::span<const std::byte> page, uint64_t expected_digest,
                               size_t expected_payload_bytes, RecordHeader* out) {
  if (page.size() < kRecordHeaderBytes) return HeaderCheck::kCorrupt;
  const uint64_t magic = get<uint64_t>(page, 0);
  if (magic == 0) return HeaderCheck::kBlank;
  if (magic != kMagic) return HeaderCheck::kCorrupt;
  if (get<uint64_t>(page, kChecksummedBytes) !=
      XXH3_64bits_withSeed(page.data(), kChecksummedBytes, kChecksumSeed)) {
    return HeaderCheck::kCorrupt;
  }
  if (get<uint32_t>(page, 8) != kRecordFormatVersion ||
      get<uint32_t>(page, 12) != kRecordHeaderBytes) {
    return HeaderCheck::kCorrupt;
  }
  RecordHeader h;
  h.sequence = get<uint64_t>(page, 16);
  h.hash = get<uint64_t>(page, 24);
  h.parent = get<uint64_t>(page, 32);
  h.fingerprint_digest = get<uint64_t>(page, 40);
  h.payload_bytes = get<uint64_t>(page, 48);
  h.payload_checksum = get<uint64_t>(page, 56);
  *out = h;
  if (h.fingerprint_digest != expected_digest) return HeaderCheck::kForeign;
  // same model, other payload size: only a bug writes that; never trust it.
  if (h.payload_bytes != expected_payload_bytes) return HeaderCheck::kCorrupt;
  return HeaderCheck::kValid;
}

}  // namespace tandem::kvcache
