// The router simulator (bench/router_sim): trace expansion, the simulated
// worker's cache, queue and KV events, and whole runs on a trace slice.
#include "bench/router_sim/router_simulator.h"

#include "gtest/gtest.h"
#include "tests/test_paths.h"

namespace tandem::bench {
namespace {

using router::cluster::KvIndex;

std::string traceFile(const std::string& name) { return tandem::testing::testDataDir() + "/traces/" + name; }

TEST(SimTraceTest, MooncakeHashIdsExpandToChainedSubBlocks) {
  absl::StatusOr<SimTrace> trace = loadSimTrace("mooncake:" + traceFile("mooncake_conversation_excerpt.jsonl"), 16);
  ASSERT_TRUE(trace.ok()) << trace.status();
  ASSERT_EQ(trace->requests.size(), 12u);
  const SimRequest& a = trace->requests[0];  // 6758 tokens, 14 hash ids
  const SimRequest& b = trace->requests[1];  // 7322 tokens, hash ids [0, 14, ...]
  EXPECT_EQ(a.prompt_tokens, 6758);
  EXPECT_EQ(a.output_tokens, 500);
  EXPECT_EQ(a.hashes.size(), 6758u / 16);
  // both start with hash id 0: its 32 sub-blocks are shared, then they differ.
  for (int i = 0; i < 32; ++i) EXPECT_EQ(a.hashes[i], b.hashes[i]) << i;
  EXPECT_NE(a.hashes[32], b.hashes[32]);
  // a coarser block size: 512 / 64 = 8 sub-blocks per id.
  absl::StatusOr<SimTrace> coarse = loadSimTrace("mooncake:" + traceFile("mooncake_conversation_excerpt.jsonl"), 64);
  ASSERT_TRUE(coarse.ok());
  EXPECT_EQ(coarse->requests[0].hashes[7], coarse->requests[1].hashes[7]);
  EXPECT_NE(coarse->requests[0].hashes[8], coarse->requests[1].hashes[8]);
}

TEST(SimTraceTest, AzureRowsShareNothingAndBadSpecsAreRefused) {
  absl::StatusOr<SimTrace> trace = loadSimTrace("azure:" + traceFile("azure_llm_2023_conv_excerpt.csv"), 16);
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_EQ(oracleHitRate(*trace, 16), 0);
  EXPECT_EQ(trace->requests[0].arrival_s, 0);
  EXPECT_FALSE(loadSimTrace("sharegpt:x", 16).ok());
  EXPECT_FALSE(loadSimTrace(traceFile("azure_llm_2023_conv_excerpt.csv"), 16).ok());
  EXPECT_FALSE(loadSimTrace("azure:/nonexistent.csv", 16).ok());
}

SimRequest request(int64_t tokens, int64_t output, uint64_t salt) {
  SimRequest r;
  r.prompt_tokens = tokens;
  r.output_tokens = output;
  kvcache::BlockHash parent = 0;
  for (int64_t b = 0; b < tokens / 16; ++b) {
    const int32_t t[2] = {static_cast<int32_t>(salt), static_cast<int32_t>(b)};
    parent = kvcache::hashBlock(parent, t);
    r.hashes.push_back(parent);
  }
  return r;
}

// request `id` routed to `worker` at `now`, as the router simulator sends
// it: the worker prefills what its cache lacks. Returns the cached tokens.
int64_t enqueue(SimWorker& worker, int id, const SimRequest& r, double now) {
  const int64_t cached = worker.cachedTokens(r);
  worker.addLocal(id, &r, r.prompt_tokens - cached, now);
  return cached;
}

TEST(SimWorkerTest, PrefillsInChunksDecodesInStepsAndAnnouncesItsCache) {
  KvIndex index;
  SimWorkerConfig config{.capacity_blocks = 150, .block_size = 16, .prefill_tokens_per_s = 16000,
                         .decode_s_per_step = 0.01, .batch_knee = 1e9, .chunk_tokens = 2048};
  SimWorker worker("w", linearModel(config), &index);
  const SimRequest a = request(1600, 11, 1);  // 100 blocks, 0.1 s of prefill
  std::vector<SimOutcome> out;
  EXPECT_EQ(enqueue(worker, 0, a, 0.0), 0);
  worker.advanceTo(10, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].kind, SimOutcome::kFirstToken);
  EXPECT_NEAR(out[0].time, 0.1, 1e-9);
  EXPECT_EQ(out[1].kind, SimOutcome::kFinished);
  EXPECT_NEAR(out[1].time, 0.1 + 10 * 0.01, 1e-9);  // 10 more tokens, one step each
  EXPECT_EQ(index.numBlocks("w"), 100u);
  // the same prompt again: all cached, one token to compute.
  EXPECT_EQ(enqueue(worker, 1, a, 10.0), 1600);
  // another 100 blocks: 50 of a's are evicted (LRU), and the index hears of it.
  const SimRequest b = request(1600, 1, 2);
  EXPECT_EQ(enqueue(worker, 2, b, 10.0), 0);
  out.clear();
  worker.advanceTo(20, out);
  EXPECT_EQ(index.numBlocks("w"), 150u);
  EXPECT_EQ(index.leadingBlocks("w", b.hashes), 100);
  EXPECT_NEAR(worker.busySeconds(), 0.1 + 0.1 + 1 / 16000.0 + 0.1 + 10 * 0.01, 1e-6);
}

TEST(SimWorkerTest, AnArrivalSplitsARunOfDecodeSteps) {
  KvIndex index;
  SimWorkerConfig config{.capacity_blocks = 1000, .block_size = 16, .prefill_tokens_per_s = 16000,
                         .decode_s_per_step = 0.01, .batch_knee = 1e9, .chunk_tokens = 2048};
  SimWorker worker("w", linearModel(config), &index);
  std::vector<SimOutcome> out;
  const SimRequest a = request(160, 101, 1), b = request(1600, 1, 2);
  enqueue(worker, 0, a, 0.0);  // prefill 0.01 s, then 100 steps
  worker.advanceTo(0.5, out);
  ASSERT_EQ(out.size(), 1u);  // the first token only
  // at 0.505 (mid step) a 1600-token prompt arrives: the step in progress
  // ends at 0.51, then a step prefills it (0.1 s) with one decode token.
  enqueue(worker, 1, b, 0.505);
  worker.advanceTo(0.65, out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[1].request, 1);
  EXPECT_NEAR(out[1].time, 0.51 + 0.01 + 0.1, 1e-9);
}

TEST(RouterSimulatorTest, KvFindsTheCacheRoundRobinMissesOnATraceSlice) {
  absl::StatusOr<SimTrace> trace = loadSimTrace("mooncake:" + traceFile("mooncake_conversation_first400.jsonl"), 16);
  ASSERT_TRUE(trace.ok()) << trace.status();
  RouterSimOptions options;
  options.workers = 4;
  options.policies = {"kv", "round_robin"};
  options.jobs = 2;  // the policies on two threads at once
  absl::StatusOr<RouterSimResult> result = simulateRouter(*trace, 16, options);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->policies.size(), 2u);
  const PolicyResult& kv = result->policies[0];
  const PolicyResult& rr = result->policies[1];
  EXPECT_GT(result->oracle_hit_rate, 0.1);
  EXPECT_LE(kv.hit_rate, result->oracle_hit_rate + 1e-9);
  EXPECT_GT(kv.hit_rate, 1.5 * rr.hit_rate);
  EXPECT_GT(kv.ttft_p99_ms, 0);
  EXPECT_GE(kv.imbalance, 1.0);
  const nlohmann::json j = result->toJson();
  EXPECT_EQ(j["requests"], 400);
  for (const char* field : {"hit_rate", "ttft_p50_ms", "ttft_p99_ms", "e2e_p99_ms", "imbalance", "rejected"}) {
    EXPECT_TRUE(j["policies"]["kv"].contains(field)) << field;
  }
  // virtual time and seeded choices: the same run gives the same numbers,
  // on one thread as on two.
  options.jobs = 1;
  absl::StatusOr<RouterSimResult> again = simulateRouter(*trace, 16, options);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->toJson()["policies"].dump(), [&] {
    nlohmann::json p = j["policies"];
    for (auto& [name, v] : p.items()) v["sim_wall_s"] = again->toJson()["policies"][name]["sim_wall_s"];
    return p.dump();
  }());
  EXPECT_NE(result->toSvg().find("<svg"), std::string::npos);
}

}  // namespace
}  // namespace tandem::bench
