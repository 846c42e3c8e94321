// The engine with KV tiers below its pool, on stories260K: while G1 holds
// about one sequence, every greedy output still equals llama.cpp's oracle; a
// prompt whose blocks were pushed out of G1 comes back from G2 (counted as
// cached, same text); a prompt onboarding from a slow G3 (a test tier the
// test completes) waits aside while other requests keep stepping.
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "kvcache/tiers/kv_tier_stats.h"
#include "server/engine/engine_loop.h"
#include "tests/kvcache/tiers/manual_tier.h"
#include "tests/server/engine/engine_loop_test_support.h"

namespace tandem::engine {
namespace {

using kvcache::testing::ManualTier;
using testing_support::Case;
using testing_support::Collector;
using testing_support::eventually;
using testing_support::greedy;
using testing_support::makeLoop;
using testing_support::oracleCases;

constexpr int kBlockSize = 4;
constexpr size_t kBlockBytes = testing_support::kStoriesKvBytesPerToken * kBlockSize;
// about one sequence of prompt (~30 tokens) plus 24 output tokens.
constexpr int kG1Blocks = 20;

EngineAssemblyOptions tieredOptions(uint64_t host_bytes) {
  EngineAssemblyOptions o = testing_support::smallOptions(kBlockSize, 16);
  o.kv_budget_bytes = kG1Blocks * kBlockBytes;
  o.max_model_len = 128;
  o.tiers.host_bytes = host_bytes;
  return o;
}

// runs `c` alone to the end; returns its collector's first output's cached
// token count and checks the oracle.
int runCase(EngineLoop& loop, generation::SeqId id, const Case& c) {
  Collector col;
  EXPECT_TRUE(loop.submit(id, c.prompt, greedy(static_cast<int>(c.expected.size())),
                          col.callback()).ok());
  EXPECT_TRUE(col.wait());
  EXPECT_EQ(col.tokens, c.expected) << "request " << id;
  return col.first().num_cached_tokens;
}

// the cached tokens a repeated prompt can hit at most: its full blocks
// below the last token.
int maxHit(const Case& c) { return (static_cast<int>(c.prompt.size()) - 1) / kBlockSize * kBlockSize; }

TEST(EngineLoopTiersTest, GreedyOutputEqualsTheOracleWhileG1HoldsAboutOneSequence) {
  auto loop = makeLoop(tieredOptions(4 << 20));
  ASSERT_NE(loop, nullptr);
  ASSERT_EQ(loop->stats().num_blocks, kG1Blocks);
  const std::vector<Case> cases = oracleCases(24);
  // twice: the second round finds the first one's blocks in G1 and G2.
  for (int round = 0; round < 2; ++round) {
    std::vector<std::unique_ptr<Collector>> cols;
    for (size_t i = 0; i < cases.size(); ++i) {
      cols.push_back(std::make_unique<Collector>());
      ASSERT_TRUE(loop->submit(round * 100 + i, cases[i].prompt,
                               greedy(static_cast<int>(cases[i].expected.size())),
                               cols.back()->callback()).ok());
    }
    for (size_t i = 0; i < cases.size(); ++i) {
      ASSERT_TRUE(cols[i]->wait());
      EXPECT_EQ(cols[i]->tokens, cases[i].expected) << "round " << round << " case " << i;
    }
  }
  EXPECT_GT(loop->stats().num_onboarded_tokens, 0);
}

// the flow both G2 tests share: case 0, then two others that push its
// blocks out of G1, then case 0 again.
int repeatAfterEviction(EngineLoop& loop) {
  const std::vector<Case> cases = oracleCases(24);
  EXPECT_EQ(runCase(loop, 1, cases[0]), 0);
  runCase(loop, 2, cases[1]);
  runCase(loop, 3, cases[3]);
  return runCase(loop, 4, cases[0]);
}

TEST(EngineLoopTiersTest, APromptPushedOutOfG1ComesBackFromHostMemory) {
  auto loop = makeLoop(tieredOptions(4 << 20));
  ASSERT_NE(loop, nullptr);
  const Case c = oracleCases(24)[0];
  EXPECT_EQ(repeatAfterEviction(*loop), maxHit(c));
  EXPECT_EQ(loop->stats().num_onboarded_tokens, maxHit(c));
  const std::vector<kvcache::KvTierStats> tiers = loop->kvTierStats();
  ASSERT_EQ(tiers.size(), 1u);
  EXPECT_EQ(tiers[0].tier, kvcache::KvTier::kHost);
  EXPECT_EQ(tiers[0].onboards, static_cast<uint64_t>(maxHit(c) / kBlockSize));
  EXPECT_GT(tiers[0].offloads, 0u);
  EXPECT_EQ(tiers[0].capacity_blocks, static_cast<int64_t>((4 << 20) / kBlockBytes));
  // the snapshot lists G2's blocks with their tier.
  int host_blocks = 0;
  for (const auto& b : loop->kvEvents().snapshot().blocks) {
    if (b.tier == kvcache::KvTier::kHost) ++host_blocks;
  }
  EXPECT_EQ(host_blocks, tiers[0].used_blocks);
  EXPECT_GT(host_blocks, 0);
}

TEST(EngineLoopTiersTest, PrefillAndRemotePrefillRequestsAlsoHitHostMemory) {
  auto loop = makeLoop(tieredOptions(4 << 20));
  ASSERT_NE(loop, nullptr);
  const std::vector<Case> cases = oracleCases(24);
  runCase(*loop, 1, cases[0]);
  runCase(*loop, 2, cases[1]);
  runCase(*loop, 3, cases[3]);
  // P's side: a prefill for another worker onboards from its own G2.
  Collector prefill;
  ASSERT_TRUE(testing_support::submitPrefill(*loop, 4, cases[0].prompt, greedy(1), nullptr,
                                             prefill.callback())
                  .ok());
  ASSERT_TRUE(prefill.wait());
  EXPECT_EQ(prefill.first().token, cases[0].expected[0]);
  EXPECT_EQ(prefill.first().num_cached_tokens, maxHit(cases[0]));
  loop->heldPrefills().release(4);
  runCase(*loop, 5, cases[1]);
  runCase(*loop, 6, cases[3]);
  // D's side: a remote prefill's admission is answered with G2's blocks cached.
  Collector awaiting;
  auto allocation =
      testing_support::awaitKv(*loop, 7, cases[0].prompt, greedy(4), awaiting.callback());
  ASSERT_TRUE(allocation.ok()) << allocation.status();
  EXPECT_EQ(allocation->num_cached_tokens, maxHit(cases[0]));
  loop->remotePrefill().fail(7);  // prefills locally from its hits
  ASSERT_TRUE(awaiting.wait());
  EXPECT_EQ(awaiting.tokens, std::vector<int32_t>(cases[0].expected.begin(), cases[0].expected.begin() + 4));
}

TEST(EngineLoopTiersTest, WithoutTiersTheSamePromptIsRecomputed) {
  auto loop = makeLoop(tieredOptions(0));
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(repeatAfterEviction(*loop), 0);
  EXPECT_TRUE(loop->kvTierStats().empty());
}

class SlowDiskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EngineAssemblyOptions o = tieredOptions(0);
    o.tiers.disk_path = "unused: the test opens its own tier";
    o.open_disk_tier = [this](const DiskTierRequest& request) -> absl::StatusOr<OpenedDiskTier> {
      EXPECT_EQ(request.block_bytes, kBlockBytes);
      EXPECT_EQ(request.fingerprint.block_size, kBlockSize);
      auto tier = std::make_unique<ManualTier>(request.block_bytes);
      disk_ = tier.get();
      return OpenedDiskTier{std::move(tier), "manual"};
    };
    loop_ = makeLoop(o);
    ASSERT_NE(loop_, nullptr);
    ASSERT_NE(disk_, nullptr);
    cases_ = oracleCases(24);
    // case 0's blocks end up in G3 only.
    runCase(*loop_, 1, cases_[0]);
    runCase(*loop_, 2, cases_[1]);
    runCase(*loop_, 3, cases_[3]);
  }

  ManualTier* disk_ = nullptr;
  std::unique_ptr<EngineLoop> loop_;
  std::vector<Case> cases_;
};

TEST_F(SlowDiskTest, OtherRequestsKeepSteppingWhileOneOnboards) {
  Collector waiting;
  ASSERT_TRUE(loop_->submit(4, cases_[0].prompt, greedy(24), waiting.callback()).ok());
  ASSERT_TRUE(disk_->waitForPendingLoads(maxHit(cases_[0]) / kBlockSize));
  ASSERT_TRUE(eventually([&] { return loop_->stats().num_onboarding == 1; }));
  // another request runs to its end meanwhile.
  runCase(*loop_, 5, cases_[2]);
  EXPECT_EQ(waiting.numOutputs(), 0u);
  EXPECT_EQ(loop_->stats().num_onboarding, 1);

  disk_->completePendingLoads();
  ASSERT_TRUE(waiting.wait());
  EXPECT_EQ(waiting.tokens, cases_[0].expected);
  EXPECT_EQ(waiting.first().num_cached_tokens, maxHit(cases_[0]));
  const std::vector<kvcache::KvTierStats> tiers = loop_->kvTierStats();
  ASSERT_EQ(tiers.size(), 1u);
  EXPECT_EQ(tiers[0].tier, kvcache::KvTier::kDisk);
  EXPECT_EQ(tiers[0].io_mode, "manual");
  EXPECT_EQ(tiers[0].onboards, static_cast<uint64_t>(maxHit(cases_[0]) / kBlockSize));
}

TEST_F(SlowDiskTest, AFailedLoadIsRecomputedWithTheSameText) {
  Collector waiting;
  ASSERT_TRUE(loop_->submit(4, cases_[0].prompt, greedy(24), waiting.callback()).ok());
  ASSERT_TRUE(disk_->waitForPendingLoads(maxHit(cases_[0]) / kBlockSize));
  disk_->completePendingLoads(/*fail=*/true);
  ASSERT_TRUE(waiting.wait());
  EXPECT_EQ(waiting.tokens, cases_[0].expected);
  EXPECT_EQ(waiting.first().num_cached_tokens, 0);
  EXPECT_GT(loop_->kvTierStats()[0].load_failures, 0u);
}

TEST_F(SlowDiskTest, CancellingAnOnboardingRequestEndsItAndItsBlocksStillLand) {
  Collector waiting;
  ASSERT_TRUE(loop_->submit(4, cases_[0].prompt, greedy(24), waiting.callback()).ok());
  ASSERT_TRUE(disk_->waitForPendingLoads(maxHit(cases_[0]) / kBlockSize));
  loop_->cancel(4);
  ASSERT_TRUE(waiting.wait());
  EXPECT_EQ(waiting.finish, generation::FinishReason::kAbort);
  disk_->completePendingLoads();
  // the loads landed in G1: every block is free or cached again.
  ASSERT_TRUE(eventually([&] {
    const EngineLoopStats s = loop_->stats();
    return s.num_onboarded_tokens == maxHit(cases_[0]) && s.num_free_blocks == s.num_blocks;
  }));
  // and the next request for the prompt hits them in G1 at once.
  EXPECT_EQ(runCase(*loop_, 6, cases_[0]), maxHit(cases_[0]));
}

}  // namespace
}  // namespace tandem::engine
