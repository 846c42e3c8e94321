// How long one routing decision takes and what the KV index costs per
// block: 64 workers, the index filled with 1M (worker, block) entries
// (chains of 256 blocks, each chain held by 4 workers), then kv decisions
// for 4096-token prompts (256 blocks) that share a chain's first half.
// Prints p50/p99 decision latency and the index's bytes per entry (its own
// estimate and the process's resident-memory growth).
//   route_latency_bench [--workers 64] [--blocks 1000000] [--decisions 20000] [--policy kv]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "router/cluster/route_planner.h"

namespace {

using namespace tandem::router::cluster;

long residentKb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int workers = 64;
  long blocks = 1'000'000;
  int decisions = 20000;
  std::string policy = "kv";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--workers")) workers = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--blocks")) blocks = std::atol(argv[i + 1]);
    if (!std::strcmp(argv[i], "--decisions")) decisions = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--policy")) policy = argv[i + 1];
  }
  constexpr int kChain = 256;
  constexpr int kHolders = 4;
  const long chains = blocks / (kChain * kHolders);
  std::mt19937_64 rng(1);
  const long rss0 = residentKb();
  KvIndex index(KvIndexOptions{.max_blocks = 0});
  std::vector<std::vector<tandem::kvcache::BlockHash>> chain_hashes(chains);
  std::vector<uint64_t> next_id(workers, 1);
  for (long c = 0; c < chains; ++c) {
    auto& h = chain_hashes[c];
    tandem::kvcache::BlockHash parent = 0;
    for (int b = 0; b < kChain; ++b) {
      const int32_t t[2] = {static_cast<int32_t>(c), b};
      parent = tandem::kvcache::hashBlock(parent, t);
      h.push_back(parent);
    }
    for (int k = 0; k < kHolders; ++k) {
      const int w = static_cast<int>((c * kHolders + k) % workers);
      const std::string address = "w" + std::to_string(w);
      tandem::v1::KvEvent e;
      for (tandem::kvcache::BlockHash x : h) {
        e.set_event_id(next_id[w]++);
        e.mutable_stored()->set_hash(x);
        index.applyEvent(address, e);
      }
    }
  }
  const long rss1 = residentKb();
  std::vector<WorkerState> states(workers);
  for (int w = 0; w < workers; ++w) {
    WorkerState& s = states[w];
    s.address = "w" + std::to_string(w);
    s.has_info = s.healthy = s.has_stats = true;
    s.info.set_role(tandem::v1::WORKER_ROLE_BOTH);
    s.info.set_block_size(16);
    s.info.set_num_blocks(100000);
    s.stats.set_num_running(static_cast<int>(rng() % 8));
    s.stats.set_num_prefill_tokens_queued(static_cast<int64_t>(rng() % 8192));
  }
  RoutePlannerOptions options;
  options.policy = policy;
  options.seed = 1;
  auto planner = RoutePlanner::create(options, &index);
  if (!planner.ok()) {
    std::fprintf(stderr, "%s\n", std::string(planner.status().message()).c_str());
    return 1;
  }
  std::vector<double> us;
  us.reserve(decisions);
  for (int i = 0; i < decisions; ++i) {
    // half a known chain, then a new tail.
    const auto& h = chain_hashes[rng() % chains];
    std::vector<tandem::kvcache::BlockHash> prompt(h.begin(), h.begin() + kChain / 2);
    tandem::kvcache::BlockHash parent = prompt.back();
    for (int b = 0; b < kChain / 2; ++b) {
      const int32_t t[2] = {-1 - i, b};
      parent = tandem::kvcache::hashBlock(parent, t);
      prompt.push_back(parent);
    }
    RouteQuery q;
    q.hashes = prompt;
    q.prompt_tokens = 16 * kChain;
    q.max_tokens = 128;
    q.key = static_cast<uint64_t>(i) + 1;
    q.now_s = i * 0.001;
    const auto t0 = std::chrono::steady_clock::now();
    auto d = (*planner)->plan(q, states, {}, {});
    const auto t1 = std::chrono::steady_clock::now();
    if (!d.ok()) return 1;
    (*planner)->finished(q.key, 1, q.now_s);
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  std::sort(us.begin(), us.end());
  std::printf("policy %s, %d workers, %zu index entries (%zu distinct hashes est.), %d decisions of %d-block prompts\n",
              policy.c_str(), workers, index.totalBlocks(), static_cast<size_t>(chains * kChain), decisions, kChain);
  std::printf("decision latency: p50 %.1f us, p99 %.1f us, max %.1f us\n", us[us.size() / 2],
              us[us.size() * 99 / 100], us.back());
  std::printf("index memory: %.1f bytes/entry (estimate), %.1f bytes/entry (RSS growth)\n",
              static_cast<double>(index.memoryBytes()) / static_cast<double>(index.totalBlocks()),
              static_cast<double>(rss1 - rss0) * 1024 / static_cast<double>(index.totalBlocks()));
  return 0;
}
