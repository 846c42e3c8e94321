// A worker with G2 host memory below a small G1: a prompt pushed out of G1
// comes back from G2 (cached tokens reported, same greedy tokens), and the
// worker's /metrics (real HTTP) shows the tier.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/worker/worker.h"
#include "tests/server/worker/worker_test_client.h"
#include "tests/stories_oracle.h"

namespace tandem::worker {
namespace {

using testing::generate;
using testing::GenerateResult;
using testing::metricValue;

constexpr int kBlockSize = 4;
constexpr uint64_t kBlockBytes = 5 * 2 * 4 * 8 * 4 * kBlockSize;  // stories260K

TEST(WorkerKvTiersTest, APromptPushedOutOfG1ComesBackFromHostMemoryAndMetricsShowIt) {
  WorkerOptions options = testing::smallWorkerOptions(tandem::v1::WORKER_ROLE_BOTH, kBlockSize);
  options.engine.kv_budget_bytes = 20 * kBlockBytes;
  options.engine.tiers.host_bytes = 1 << 20;
  auto worker = Worker::create(options);
  ASSERT_TRUE(worker.ok()) << worker.status();
  const auto& oracle = tandem::testing::storiesOracle();
  // prompt = oracle prompt + its first 24 tokens; the rest is the expected output.
  const auto run = [&](int i) {
    std::vector<int32_t> prompt = oracle[i].prompt_ids;
    prompt.insert(prompt.end(), oracle[i].completion_ids.begin(), oracle[i].completion_ids.begin() + 24);
    const std::vector<int32_t> expected(oracle[i].completion_ids.begin() + 24, oracle[i].completion_ids.end());
    GenerateResult r = generate((*worker)->info().address(), prompt, 24);
    EXPECT_TRUE(r.status.ok()) << r.status.error_message();
    EXPECT_EQ(r.tokens, expected) << "case " << i;
    return std::make_pair(r.num_cached_tokens, static_cast<int>(prompt.size()));
  };
  EXPECT_EQ(run(0).first, 0);
  run(1);
  run(3);  // case 0's blocks are out of G1 now
  const auto [cached, prompt_len] = run(0);
  const int hit = (prompt_len - 1) / kBlockSize * kBlockSize;
  EXPECT_EQ(cached, hit);

  const auto [code, body] = testing::httpGet((*worker)->metricsPort(), "/metrics");
  ASSERT_EQ(code, 200);
  const std::string host = "{tier=\"host\"}";
  EXPECT_EQ(metricValue(body, "tandem:kv_tier_capacity_blocks" + host), (1 << 20) / kBlockBytes);
  EXPECT_GT(metricValue(body, "tandem:kv_tier_used_blocks" + host), 0);
  EXPECT_EQ(metricValue(body, "tandem:kv_tier_capacity_blocks{tier=\"device\"}"), 20);
  EXPECT_GT(metricValue(body, "tandem:kv_tier_offloads_total" + host), 0);
  EXPECT_EQ(metricValue(body, "tandem:kv_tier_hits_total" + host), hit / kBlockSize);
  EXPECT_EQ(metricValue(body, "tandem:kv_tier_onboards_total" + host), hit / kBlockSize);
  EXPECT_EQ(metricValue(body, "tandem:kv_tier_read_bytes_total" + host), hit / kBlockSize * kBlockBytes);
  EXPECT_EQ(metricValue(body, "tandem:kv_tier_read_seconds_count" + host), hit / kBlockSize);
  EXPECT_EQ(metricValue(body, "tandem:kv_tier_io_mode{mode=\"memcpy\",tier=\"host\"}"), 1);
  EXPECT_EQ(metricValue(body, "tandem:kv_onboarded_tokens_total"), hit);
  // a second scrape adds nothing that did not happen.
  const auto again = testing::httpGet((*worker)->metricsPort(), "/metrics");
  EXPECT_EQ(metricValue(again.second, "tandem:kv_tier_onboards_total" + host), hit / kBlockSize);
}

}  // namespace
}  // namespace tandem::worker
