// The engine on the hip backend (over the host emulator), where G1 KV and
// the logits live in "device" memory: steps sample their tokens on the
// device and download only those, with llama.cpp's greedy tokens, the host
// sampler's log-probabilities and, seeded, the host sampler's sampled
// tokens (penalties, bias, a grammar); a block the pool evicts reaches the host
// tier, and comes back when a prompt onboards it, through the tier copies'
// transfer stream, never the compute stream.
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/hip/hip_backend.h"
#include "kvcache/tiers/kv_tier_stats.h"
#include "server/engine/engine_loop.h"
#include "tests/server/engine/engine_loop_test_support.h"

namespace tandem::engine {
namespace {

using testing_support::Case;
using testing_support::Collector;
using testing_support::greedy;
using testing_support::oracleCases;

constexpr int kBlockSize = 4;
constexpr size_t kBlockBytes = testing_support::kStoriesKvBytesPerToken * kBlockSize;
// the emulator is slow: a few output tokens, and a G1 of about one
// sequence of prompt (~30 tokens) plus those.
constexpr int kOutputTokens = 6;
constexpr int kG1Blocks = 11;

// `host_bytes`: the host tier's size (0: none).
std::unique_ptr<EngineLoop> hipLoop(uint64_t host_bytes) {
  EngineAssemblyOptions o = testing_support::smallOptions(kBlockSize, 16);
  o.backend = kernels::BackendKind::kHip;
  o.kv_budget_bytes = kG1Blocks * kBlockBytes;
  o.max_model_len = 128;
  o.tiers.host_bytes = host_bytes;
  o.create_backend =
      [](const kernels::BackendOptions& b) -> absl::StatusOr<std::unique_ptr<kernels::Backend>> {
    auto hip = kernels::hip::HipBackend::create(b.device);
    if (!hip.ok()) return hip.status();
    return std::unique_ptr<kernels::Backend>(std::move(*hip));
  };
  return testing_support::makeLoop(o);
}

// runs `c` alone for kOutputTokens, checks the oracle; returns its cached
// tokens.
int runCase(EngineLoop& loop, generation::SeqId id, const Case& c) {
  Collector col;
  EXPECT_TRUE(loop.submit(id, c.prompt, greedy(kOutputTokens), col.callback()).ok());
  EXPECT_TRUE(col.wait(std::chrono::seconds(300)));
  EXPECT_EQ(col.tokens, std::vector<int32_t>(c.expected.begin(), c.expected.begin() + kOutputTokens))
      << "request " << id;
  return col.first().num_cached_tokens;
}

// the log-probability of each output token, in order.
std::vector<float> logprobs(Collector& col) {
  std::lock_guard lock(col.mu);
  std::vector<float> out;
  for (const generation::TokenOutput& o : col.outputs) {
    if (o.token >= 0) out.push_back(o.logprob);
  }
  return out;
}

TEST(EngineLoopHipTest, GreedyStepsPickTheirTokensOnTheDeviceAsTheHostSamplerWould) {
  auto loop = hipLoop(0);
  ASSERT_NE(loop, nullptr);
  const Case c = oracleCases(24)[0];
  const std::vector<int32_t> want(c.expected.begin(), c.expected.begin() + kOutputTokens);
  // picked on the device
  Collector device;
  ASSERT_TRUE(loop->submit(1, c.prompt, greedy(kOutputTokens), device.callback()).ok());
  ASSERT_TRUE(device.wait(std::chrono::seconds(300)));
  EXPECT_EQ(device.tokens, want);
  const int64_t picked = loop->localEngine().runner().pickedSteps();
  EXPECT_EQ(picked, kOutputTokens);
  // asking for top logprobs takes the logits to the host sampler
  generation::SamplingParams with_logprobs = greedy(kOutputTokens);
  with_logprobs.logprobs = 1;
  Collector host;
  ASSERT_TRUE(loop->submit(2, c.prompt, with_logprobs, host.callback()).ok());
  ASSERT_TRUE(host.wait(std::chrono::seconds(300)));
  EXPECT_EQ(host.tokens, want);
  EXPECT_EQ(loop->localEngine().runner().pickedSteps(), picked);
  const std::vector<float> d = logprobs(device), h = logprobs(host);
  ASSERT_EQ(d.size(), h.size());
  for (size_t i = 0; i < d.size(); ++i) EXPECT_NEAR(d[i], h[i], 1e-4f) << "token " << i;
}

// one request run alone, its outputs into `col`.
void runAlone(EngineLoop& loop, generation::SeqId id, const std::vector<int32_t>& prompt,
              const generation::SamplingParams& params, Collector& col) {
  EXPECT_TRUE(loop.submit(id, prompt, params, col.callback()).ok());
  EXPECT_TRUE(col.wait(std::chrono::seconds(300)));
}

TEST(EngineLoopHipTest, SeededSampledStepsOnTheDeviceTakeTheHostSamplersTokens) {
  auto loop = hipLoop(0);
  ASSERT_NE(loop, nullptr);
  const Case c = oracleCases(24)[1];
  generation::SamplingParams p = greedy(kOutputTokens);
  p.temperature = 0.9f;
  p.top_k = 30;
  p.top_p = 0.95f;
  p.min_p = 0.01f;
  p.repetition_penalty = 1.3f;
  p.frequency_penalty = 0.5f;
  p.logit_bias = {{c.prompt.back(), 2.0f}};
  for (uint64_t seed : {1u, 3u}) {
    p.seed = seed;
    // the third under a grammar: its mask crosses to the device
    if (seed == 3) p.grammar = R"(root ::= (" once" | " upon" | " a" | " time" | " there" | " was")+)";
    const int64_t before = loop->localEngine().runner().pickedSteps();
    Collector device;
    runAlone(*loop, 10 + seed, c.prompt, p, device);
    EXPECT_EQ(loop->localEngine().runner().pickedSteps() - before, kOutputTokens);
    // top logprobs take the logits to the host sampler: the same tokens
    generation::SamplingParams on_host = p;
    on_host.logprobs = 1;
    Collector host;
    runAlone(*loop, 20 + seed, c.prompt, on_host, host);
    EXPECT_EQ(loop->localEngine().runner().pickedSteps() - before, kOutputTokens);
    EXPECT_EQ(device.tokens, host.tokens) << "seed " << seed;
    const std::vector<float> d = logprobs(device), h = logprobs(host);
    ASSERT_EQ(d.size(), h.size());
    for (size_t i = 0; i < d.size(); ++i) EXPECT_NEAR(d[i], h[i], 1e-4f) << "token " << i;
  }
}

TEST(EngineLoopHipTest, EvictionAndOnboardingRunOnTheTransferStreamWithTheOraclesTokens) {
  auto loop = hipLoop(4 << 20);
  ASSERT_NE(loop, nullptr);
  ASSERT_EQ(loop->stats().num_blocks, kG1Blocks);
  const std::vector<Case> cases = oracleCases(24);
  // case 0, two others that push its blocks out of G1, case 0 again
  EXPECT_EQ(runCase(*loop, 1, cases[0]), 0);
  runCase(*loop, 2, cases[1]);
  runCase(*loop, 3, cases[3]);
  const int hit = (static_cast<int>(cases[0].prompt.size()) - 1) / kBlockSize * kBlockSize;
  EXPECT_EQ(runCase(*loop, 4, cases[0]), hit);

  const std::vector<kvcache::KvTierStats> tiers = loop->kvTierStats();
  ASSERT_EQ(tiers.size(), 1u);
  EXPECT_GT(tiers[0].offloads, 0u);
  EXPECT_EQ(tiers[0].onboards, static_cast<uint64_t>(hit / kBlockSize));
  // every block that moved went over the transfer stream: the evicted ones
  // down, the onboarded ones up
  const RunnerBlockIo::Stats copies = loop->localEngine().kvTierCopies();
  EXPECT_EQ(copies.compute_stream_copies, 0u);
  EXPECT_EQ(copies.transfer_stream_copies, tiers[0].offloads + tiers[0].onboards);
  // waited for once a step or a prompt, never once a block
  EXPECT_LT(copies.transfer_waits, tiers[0].offloads + tiers[0].onboards);
}

}  // namespace
}  // namespace tandem::engine
