// Time to first token of a request whose PREFIX-token prefix is (a) cached
// nowhere (recomputed), (b) in G2 host memory, (c) in G3 on disk: the engine
// onboards (b) and (c) into G1 before it computes the last token. One engine
// per (prefix, tier) with G1 holding about one request: each repeat runs a
// fresh prompt P, then two fillers that push P's blocks out of G1 into the
// tier (waiting until the disk's writes are done), then times P again. The
// recompute column times fresh prompts. Prints a markdown row per prefix:
// median TTFT of each, the ratios, and the median latency of one G3 block
// read (submit to completion; reads overlap at the queue depth).
//
// Usage: kv_onboard_bench MODEL DISK_DIR [PREFIXES (128,512,2048)] [REPEATS (5)] [THREADS (2)]
//   DISK_DIR holds G3's file (deleted first): put it on the real disk, not tmpfs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "kvcache/tiers/disk_record.h"
#include "kvcache/tiers/disk_tier.h"
#include "server/engine/disk_tier_opener.h"
#include "server/engine/engine_loop.h"

using namespace tandem;
using namespace tandem::engine;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kBlockSize = 16;
enum class Mode { kRecompute, kHost, kDisk };

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : (v[(v.size() - 1) / 2] + v[v.size() / 2]) / 2;
}

std::vector<int32_t> randomPrompt(uint64_t seed, int tokens, int vocab) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> out(static_cast<size_t>(tokens));
  for (auto& t : out) t = static_cast<int32_t>(3 + rng() % static_cast<uint64_t>(vocab - 3));
  return out;
}

struct Timed {
  double ttft_ms = 0;
  int cached = 0;
};

// runs `prompt` for one token; its TTFT and cached tokens.
Timed runOnce(EngineLoop& loop, generation::SeqId id, const std::vector<int32_t>& prompt) {
  generation::SamplingParams p;
  p.temperature = 0.0f;
  p.max_tokens = 1;
  p.ignore_eos = true;
  auto done = std::make_shared<std::promise<Timed>>();
  auto future = done->get_future();
  const auto start = Clock::now();
  auto status = loop.submit(id, prompt, p, [done, start](const generation::TokenOutput& out) {
    if (!out.finished()) return;
    done->set_value({std::chrono::duration<double, std::milli>(Clock::now() - start).count(),
                     out.num_cached_tokens});
  });
  if (!status.ok()) {
    std::fprintf(stderr, "submit: %s\n", status.ToString().c_str());
    std::exit(1);
  }
  return future.get();
}

// blocks onboarded from the tiers below G1 so far.
uint64_t onboards(const EngineLoop& loop) {
  uint64_t n = 0;
  for (const auto& t : loop.kvTierStats()) n += t.onboards;
  return n;
}

struct Result {
  std::vector<double> ttft_ms;
  std::vector<double> disk_read_ms;  // mean latency of one G3 block read, per repeat
  int short_hits = 0;                // repeats not wholly onboarded from the tier
};

Result measure(const std::string& model, const std::string& disk_dir, int prefix, int repeats,
               int threads, Mode mode) {
  const int blocks = prefix / kBlockSize;
  EngineAssemblyOptions o;
  o.num_threads = threads;
  o.block_size = kBlockSize;
  o.chunk_size = 512;
  o.max_num_batched_tokens = 512;
  o.max_num_seqs = 4;
  o.max_model_len = prefix + 16;
  kvcache::DiskTier* disk = nullptr;
  std::filesystem::remove_all(disk_dir);
  auto probe = EngineAssembly::create(model, [&] {
    EngineAssemblyOptions p = o;
    p.kv_budget_bytes = 64ull << 20;
    return p;
  }());
  if (!probe.ok()) {
    std::fprintf(stderr, "%s\n", probe.status().ToString().c_str());
    std::exit(1);
  }
  // the pool's bytes per block (at most: the budget's floor share).
  const size_t block_bytes = (64ull << 20) / static_cast<size_t>((*probe)->numBlocks());
  const int vocab = (*probe)->weights().config().vocab_size;
  probe->reset();
  // G1: one request (blocks + its last, partial one) and one more block, so
  // each filler evicts all but one block cached before it; the tier: three.
  o.kv_budget_bytes = static_cast<uint64_t>(blocks + 2) * block_bytes;
  if (mode == Mode::kHost) o.tiers.host_bytes = static_cast<uint64_t>(3 * blocks + 8) * block_bytes;
  if (mode == Mode::kDisk) {
    o.tiers.disk_path = disk_dir;
    o.tiers.disk_bytes = static_cast<uint64_t>(3 * blocks + 8) * kvcache::recordBytesFor(block_bytes);
    o.tiers.disk_min_hits = 1;
    o.open_disk_tier = [&disk](const DiskTierRequest& r) -> absl::StatusOr<OpenedDiskTier> {
      auto opened = openDiskTier(r);
      if (opened.ok()) disk = static_cast<kvcache::DiskTier*>(opened->tier.get());
      return opened;
    };
  }
  auto assembly = EngineAssembly::create(model, o);
  if (!assembly.ok()) {
    std::fprintf(stderr, "%s\n", assembly.status().ToString().c_str());
    std::exit(1);
  }
  EngineLoop loop(std::move(*assembly));
  if (disk != nullptr && (disk->disabled() || !disk->stats().direct_io.load())) {
    std::fprintf(stderr, "kv_onboard_bench: G3 %s\n",
                 disk->disabled() ? disk->disabledReason().c_str() : "is not using O_DIRECT (tmpfs?)");
  }
  Result r;
  generation::SeqId id = 0;
  // one warm-up request: first-touch costs land outside the timings.
  runOnce(loop, ++id, randomPrompt(999, prefix + 1, vocab));
  for (int i = 0; i < repeats; ++i) {
    const std::vector<int32_t> prompt = randomPrompt(1000 + i, prefix + 1, vocab);
    if (mode == Mode::kRecompute) {
      r.ttft_ms.push_back(runOnce(loop, ++id, prompt).ttft_ms);
      continue;
    }
    runOnce(loop, ++id, prompt);
    const int64_t stored_before = disk ? disk->stats().stores.load() : 0;
    // two fillers push all of P out of G1 (P's blocks are the least recent).
    runOnce(loop, ++id, randomPrompt(5000 + i, prefix + 1, vocab));
    runOnce(loop, ++id, randomPrompt(7000 + i, prefix + 1, vocab));
    if (disk != nullptr) {
      const auto deadline = Clock::now() + std::chrono::seconds(60);
      while (disk->stats().stores.load() < stored_before + blocks && Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      // the fillers' writes may still land (completions come in any order):
      // wait until no write completes for 20 ms.
      for (int64_t seen = -1; seen != disk->stats().stores.load() && Clock::now() < deadline;) {
        seen = disk->stats().stores.load();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    const int64_t reads_before = disk ? disk->stats().read_latency.count() : 0;
    const int64_t read_us_before = disk ? disk->stats().read_latency.sumMicros() : 0;
    const uint64_t onboards_before = onboards(loop);
    const Timed t = runOnce(loop, ++id, prompt);
    // the whole prefix cached, and every block of it from the tier.
    // (the loop publishes its stats after each step: give them a moment.)
    const auto stats_deadline = Clock::now() + std::chrono::seconds(1);
    while (onboards(loop) - onboards_before < static_cast<uint64_t>(blocks) && Clock::now() < stats_deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (t.cached < prefix || onboards(loop) - onboards_before < static_cast<uint64_t>(blocks)) ++r.short_hits;
    r.ttft_ms.push_back(t.ttft_ms);
    if (disk != nullptr) {
      const int64_t n = disk->stats().read_latency.count() - reads_before;
      const int64_t us = disk->stats().read_latency.sumMicros() - read_us_before;
      if (n > 0) r.disk_read_ms.push_back(static_cast<double>(us) / 1000.0 / static_cast<double>(n));
    }
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: kv_onboard_bench MODEL DISK_DIR [PREFIXES] [REPEATS] [THREADS]\n");
    return 2;
  }
  const std::string model = argv[1], disk_dir = argv[2];
  std::vector<int> prefixes;
  for (absl::string_view s : absl::StrSplit(argc > 3 ? argv[3] : "128,512,2048", ',')) {
    int v = 0;
    if (!absl::SimpleAtoi(s, &v) || v < kBlockSize || v % kBlockSize != 0) {
      std::fprintf(stderr, "prefix '%s' is not a positive multiple of %d\n", std::string(s).c_str(), kBlockSize);
      return 2;
    }
    prefixes.push_back(v);
  }
  const int repeats = argc > 4 ? std::atoi(argv[4]) : 5;
  const int threads = argc > 5 ? std::atoi(argv[5]) : 2;
  std::printf("| prefix tokens | recompute TTFT ms | G2 TTFT ms | G3 TTFT ms | G2 / recompute | G3 / recompute | G3 block read ms (mean) | repeats not wholly from the tier G2/G3 |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (int prefix : prefixes) {
    const Result rc = measure(model, disk_dir, prefix, repeats, threads, Mode::kRecompute);
    const Result g2 = measure(model, disk_dir, prefix, repeats, threads, Mode::kHost);
    const Result g3 = measure(model, disk_dir, prefix, repeats, threads, Mode::kDisk);
    const double m_rc = median(rc.ttft_ms), m_g2 = median(g2.ttft_ms), m_g3 = median(g3.ttft_ms);
    std::printf("| %d | %.1f | %.1f | %.1f | %.2f | %.2f | %.1f | %d/%d |\n", prefix, m_rc, m_g2, m_g3,
                m_g2 / m_rc, m_g3 / m_rc, median(g3.disk_read_ms), g2.short_hits, g3.short_hits);
    std::fflush(stdout);
  }
  std::filesystem::remove_all(disk_dir);
  return 0;
}
