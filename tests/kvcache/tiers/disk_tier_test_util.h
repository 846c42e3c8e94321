// Helpers shared by the G3 disk tier tests: deterministic block bytes,
// blocking store/load, an event recorder, options over a temp directory.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kvcache/tiers/disk_record.h"
#include "kvcache/tiers/disk_tier.h"
#include "kvcache/kv_events.h"

namespace tandem::kvcache::testing {

// not a multiple of 4 KiB, so the record's zero padding is exercised.
inline constexpr size_t kTestBlockBytes = 10'000;

inline ModelFingerprint testFingerprint() {
  ModelFingerprint f;
  f.architecture = "llama";
  f.num_layers = 2;
  f.num_kv_heads = 2;
  f.head_dim = 8;
  f.block_size = 16;
  f.dtype = DType::kF32;
  f.weights_id = 0x1234;
  return f;
}

inline DiskTierOptions testOptions(const std::string& dir, DiskIoMode io, int blocks,
                                   int min_hits = 1) {
  DiskTierOptions o;
  o.dir = dir;
  o.block_bytes = kTestBlockBytes;
  o.capacity_bytes = static_cast<uint64_t>(blocks) * recordBytesFor(kTestBlockBytes);
  o.io = io;
  o.queue_depth = 8;
  o.min_hits = min_hits;
  o.fingerprint = testFingerprint();
  return o;
}

// bytes of block `seed`: a xorshift stream, different for every seed.
inline std::vector<std::byte> blockData(uint64_t seed, size_t bytes = kTestBlockBytes) {
  std::vector<std::byte> out(bytes);
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
  for (auto& b : out) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b = static_cast<std::byte>(x);
  }
  return out;
}

constexpr auto kIoDeadline = std::chrono::seconds(60);

// store() then wait for its done; FailedPrecondition("not taken") when store() said false.
inline absl::Status storeSync(LowerTier& tier, BlockHash hash, BlockHash parent,
                              const std::vector<std::byte>& data) {
  auto promise = std::make_shared<std::promise<absl::Status>>();
  auto future = promise->get_future();
  if (!tier.store(hash, parent, data, [promise](absl::Status s) { promise->set_value(s); })) {
    return absl::FailedPreconditionError("not taken");
  }
  if (future.wait_for(kIoDeadline) != std::future_status::ready) {
    return absl::DeadlineExceededError("store never completed");
  }
  return future.get();
}

inline absl::Status loadSync(LowerTier& tier, BlockHash hash, std::vector<std::byte>& dst) {
  auto promise = std::make_shared<std::promise<absl::Status>>();
  auto future = promise->get_future();
  tier.load(hash, dst, [promise](absl::Status s) { promise->set_value(s); });
  if (future.wait_for(kIoDeadline) != std::future_status::ready) {
    return absl::DeadlineExceededError("load never completed");
  }
  return future.get();
}

class RecordingListener : public KvEventListener {
 public:
  void onKvEvent(const KvEvent& event) override {
    std::lock_guard lock(mu_);
    events_.push_back(event);
  }
  std::vector<KvEvent> events() const {
    std::lock_guard lock(mu_);
    return events_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<KvEvent> events_;
};

// the tier's file in `dir`.
inline std::string tierFile(const std::string& dir) { return dir + "/" + DiskTier::kFileName; }

// xors one byte of the file at `offset` with 0xff (buffered, beside the tier's own fd).
inline bool flipByte(const std::string& path, uint64_t offset) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  unsigned char b = 0;
  bool ok = pread(fd, &b, 1, static_cast<off_t>(offset)) == 1;
  b ^= 0xff;
  ok = ok && pwrite(fd, &b, 1, static_cast<off_t>(offset)) == 1 && fsync(fd) == 0;
  ::close(fd);
  return ok;
}

inline std::string ioName(DiskIoMode io) { return io == DiskIoMode::kUring ? "uring" : "threads"; }

}  // namespace tandem::kvcache::testing
