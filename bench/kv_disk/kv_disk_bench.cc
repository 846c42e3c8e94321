// Sustained G3 bandwidth: fills a DiskTier file with blocks through store()
// (the engine's offload path: copy + checksum on this thread, O_DIRECT writes
// from the ring) and reads every block back through load() in random order
// (O_DIRECT reads, checksum verified, copied out), with `queue_depth` I/Os in
// flight; once the queue is full, blocks go in batches of a quarter of it. bench/kv_disk_vs_fio.sh runs it beside fio on the same file system.
//
// Usage: kv_disk_bench DIR (its G3 file is deleted first) [FILE_BYTES (2G)] [BLOCK_BYTES (1179648)] [QUEUE_DEPTH (32)] [uring|threads]
//
// Prints one line of key=value: the I/O mode in use, record bytes, blocks,
// and MB/s (1e6 B/s) of records (what the disk moved, comparable with fio at
// the record size) and of payload (the KV bytes the engine sees).
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kvcache/tiers/disk_tier.h"

using namespace tandem::kvcache;
using Clock = std::chrono::steady_clock;

namespace {

uint64_t parseBytes(const char* s) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  switch (*end) {
    case 'K': case 'k': v *= 1024; break;
    case 'M': case 'm': v *= 1024 * 1024; break;
    case 'G': case 'g': v *= 1024.0 * 1024 * 1024; break;
    default: break;
  }
  return static_cast<uint64_t>(v);
}

// counts completions; lets the issuing thread sleep until a given count
// (woken once, when it is reached, not at every completion).
struct Completions {
  std::mutex mu;
  std::condition_variable cv;
  int64_t done = 0;
  int64_t failed = 0;
  int64_t wake_at = -1;  // the count the issuing thread waits for; -1: none
  void add(const absl::Status& s) {
    std::lock_guard lock(mu);
    ++done;
    if (!s.ok()) {
      ++failed;
      std::fprintf(stderr, "kv_disk_bench: %s\n", s.ToString().c_str());
    }
    if (wake_at >= 0 && done >= wake_at) {
      wake_at = -1;
      cv.notify_one();
    }
  }
  void waitFor(int64_t n) {
    std::unique_lock lock(mu);
    if (done >= n) return;
    wake_at = n;
    cv.wait(lock, [&] { return done >= n; });
  }
  int64_t count() {
    std::lock_guard lock(mu);
    return done;
  }
};

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: kv_disk_bench DIR [FILE_BYTES (2G)] [BLOCK_BYTES (1179648)] "
                 "[QUEUE_DEPTH (32)] [uring|threads]\n");
    return 2;
  }
  DiskTierOptions o;
  o.dir = argv[1];
  o.capacity_bytes = argc > 2 ? parseBytes(argv[2]) : (uint64_t{2} << 30);
  o.block_bytes = argc > 3 ? parseBytes(argv[3]) : 12 * 2 * 16 * 768 * 4;
  o.queue_depth = argc > 4 ? std::atoi(argv[4]) : 32;
  o.io = argc > 5 && std::string(argv[5]) == "threads" ? DiskIoMode::kThreads : DiskIoMode::kUring;
  o.min_hits = 1;
  o.fingerprint.architecture = "bench";
  // a fresh file every run: blocks recovered from a previous run would make
  // every store() a no-op.
  std::filesystem::remove(std::filesystem::path(o.dir) / DiskTier::kFileName);
  auto opened = DiskTier::open(o);
  if (!opened.ok() || (*opened)->disabled()) {
    std::fprintf(stderr, "kv_disk_bench: %s\n",
                 opened.ok() ? (*opened)->disabledReason().c_str()
                             : opened.status().ToString().c_str());
    return 1;
  }
  DiskTier& tier = **opened;
  const int64_t n = tier.capacityBlocks();

  // a few distinct source blocks; each block's first 8 bytes carry its hash.
  std::mt19937_64 rng(42);
  std::vector<std::vector<std::byte>> sources(4, std::vector<std::byte>(o.block_bytes));
  for (auto& s : sources) {
    for (auto& b : s) b = static_cast<std::byte>(rng());
  }

  // blocks offered or asked for together once the queue is full (a quarter of it).
  const int batch = std::max(1, o.queue_depth / 4);
  Completions writes;
  const auto w0 = Clock::now();
  for (int64_t i = 0; i < n; ++i) {
    const BlockHash hash = 1000 + i;
    auto& src = sources[i % sources.size()];
    std::memcpy(src.data(), &hash, sizeof(hash));
    for (;;) {
      const int64_t seen = writes.count();
      if (tier.store(hash, hash - 1, src, [&](absl::Status s) { writes.add(s); })) break;
      if (tier.disabled()) {
        std::fprintf(stderr, "kv_disk_bench: %s\n", tier.disabledReason().c_str());
        return 1;
      }
      // back-pressure: every staging buffer is busy. Offer again once a batch
      // of them is free, as an engine evicting a burst of blocks would.
      writes.waitFor(std::min<int64_t>(seen + batch, i));
    }
  }
  writes.waitFor(n);
  const auto w1 = Clock::now();

  std::vector<BlockHash> order(n);
  std::iota(order.begin(), order.end(), BlockHash{1000});
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<std::vector<std::byte>> dst(o.queue_depth, std::vector<std::byte>(o.block_bytes));
  std::vector<int> free_dst(o.queue_depth);
  std::iota(free_dst.begin(), free_dst.end(), 0);
  std::mutex mu;
  std::condition_variable cv;
  size_t wake_at_free = 0;  // 0: the issuing thread is not waiting
  int64_t read_done = 0, read_bad = 0;
  const auto r0 = Clock::now();
  for (int64_t i = 0; i < n; ++i) {
    const BlockHash hash = order[i];
    int d;
    {
      // as an engine loading a prefix: a batch of blocks at a time.
      std::unique_lock lock(mu);
      if (free_dst.empty()) {
        wake_at_free = static_cast<size_t>(std::min<int64_t>(batch, n - i));
        cv.wait(lock, [&] { return free_dst.size() >= wake_at_free; });
        wake_at_free = 0;
      }
      d = free_dst.back();
      free_dst.pop_back();
    }
    tier.load(hash, dst[d], [&, d, hash](absl::Status s) {
      BlockHash got = 0;
      std::memcpy(&got, dst[d].data(), sizeof(got));
      std::lock_guard lock(mu);
      if (!s.ok() || got != hash) ++read_bad;
      ++read_done;
      free_dst.push_back(d);
      if (wake_at_free > 0 && free_dst.size() >= wake_at_free) cv.notify_one();
      if (read_done == n) cv.notify_one();
    });
  }
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return read_done == n; });
  }
  const auto r1 = Clock::now();

  const double record = static_cast<double>(tier.recordBytes());
  const double payload = static_cast<double>(o.block_bytes);
  const double ws = seconds(w0, w1), rs = seconds(r0, r1);
  std::printf(
      "io=%s block_bytes=%zu record_bytes=%zu queue_depth=%d blocks=%lld "
      "write_MBps=%.1f read_MBps=%.1f write_payload_MBps=%.1f read_payload_MBps=%.1f "
      "write_errors=%lld read_errors=%lld\n",
      std::string(tier.ioModeName()).c_str(), o.block_bytes, tier.recordBytes(), o.queue_depth,
      static_cast<long long>(n), n * record / ws / 1e6, n * record / rs / 1e6,
      n * payload / ws / 1e6, n * payload / rs / 1e6, static_cast<long long>(writes.failed),
      static_cast<long long>(read_bad));
  return writes.failed == 0 && read_bad == 0 ? 0 : 1;
}
