// The tiers below the block pool with a real KvCacheManager and HostTier:
// offload on eviction, loads back into pool blocks (sync from G2, async
// from a G3 stand-in), demotion, watermarks and failed loads. (The engine's
// TierOnboardConnector decides what to load for a request; here the test
// drives the chain itself.)
#include "kvcache/tiers/kv_tier_chain.h"

#include <memory>
#include <numeric>
#include <vector>

#include "gtest/gtest.h"
#include "kvcache/kv_cache_manager.h"
#include "kvcache/kv_event_log.h"
#include "tests/kvcache/tiers/manual_tier.h"

namespace tandem::kvcache {
namespace {

using testing::BytesBlockIo;
using testing::ManualTier;

constexpr int kBlockSize = 4;
constexpr size_t kChainBlockBytes = 64;
constexpr int kG1Blocks = 4;

std::vector<int32_t> tokens(int first, int n) {
  std::vector<int32_t> out(n);
  std::iota(out.begin(), out.end(), first);
  return out;
}

// loads of one prompt back into the pool, started.
struct Onboarding {
  uint64_t ticket = 0;
  bool done = false;  // every load completed in startLoads (G2 only)
  int blocks = 0;     // 0: nothing below G1 continues the prompt
};

// the full blocks of `prompt` (its last token excluded, as a prefix hit
// always recomputes it) that the tiers hold (G3 too with `disk`), loaded
// into the blocks of a new sequence `seq` of `kv`.
Onboarding startOnboard(KvCacheManager& kv, KvTierChain& chain, SeqId seq,
                        const std::vector<int32_t>& prompt, bool disk) {
  const size_t full = (prompt.size() - 1) / kBlockSize;
  const std::vector<BlockHash> hashes =
      blockHashes(std::span<const int32_t>(prompt).first(full * kBlockSize), kBlockSize);
  size_t n = 0;
  while (n < hashes.size() && chain.locate(hashes[n], disk)) ++n;
  if (n == 0) return {};
  EXPECT_EQ(kv.allocatePrompt(seq, {}), 0);
  EXPECT_TRUE(kv.appendSlots(seq, static_cast<int>(n) * kBlockSize).ok());
  std::vector<KvTierChain::Load> loads;
  for (size_t b = 0; b < n; ++b) loads.push_back({hashes[b], kv.blockTable(seq)[b]});
  const KvTierChain::Started started = chain.startLoads(loads);
  return {started.ticket, started.done, static_cast<int>(n)};
}

// the leading loaded blocks go to the prefix cache and `seq` is freed;
// returns how many loaded.
int finishOnboard(KvCacheManager& kv, KvTierChain& chain, SeqId seq,
                  const std::vector<int32_t>& prompt, uint64_t ticket) {
  const std::vector<bool> loaded = chain.finishLoads(ticket);
  int good = 0;
  while (good < static_cast<int>(loaded.size()) && loaded[good]) ++good;
  kv.commitFullBlocks(seq, std::span<const int32_t>(prompt).first(good * kBlockSize));
  kv.freeSequence(seq);
  return good;
}

class KvTierChainTest : public ::testing::Test {
 protected:
  void SetUp() override { kv_.setEventListener(&log_); }

  // installs the tiers and hands them to the cache.
  void useTiers(int64_t host_blocks, bool disk) {
    if (host_blocks > 0) chain_.setHostTier(std::make_unique<HostTier>(kChainBlockBytes, host_blocks));
    if (disk) {
      auto g3 = std::make_unique<ManualTier>(kChainBlockBytes);
      g3_ = g3.get();
      chain_.setDiskTier(std::move(g3), "manual");
    }
    chain_.setEventListener(&log_);
    kv_.setEvictionListener(&chain_);
  }

  // computes `prompt` as a sequence would: block b gets bytes of seed
  // seed_base + b; its full blocks are committed, then it is freed.
  void compute(SeqId seq, const std::vector<int32_t>& prompt, int seed_base, bool commit = true) {
    ASSERT_EQ(kv_.allocatePrompt(seq, prompt), 0);
    ASSERT_TRUE(kv_.appendSlots(seq, static_cast<int>(prompt.size())).ok());
    const auto table = kv_.blockTable(seq);
    for (size_t b = 0; b < table.size(); ++b) io_.fill(table[b], seed_base + static_cast<int>(b));
    if (commit) kv_.commitFullBlocks(seq, prompt);
    kv_.freeSequence(seq);
  }

  // the prompt's prefix hits hold the bytes compute() gave them.
  void expectHitsHold(SeqId seq, const std::vector<int32_t>& prompt, int seed_base,
                      int expected_tokens) {
    ASSERT_EQ(kv_.allocatePrompt(seq, prompt), expected_tokens);
    const auto table = kv_.blockTable(seq);
    for (size_t b = 0; b < table.size(); ++b) {
      EXPECT_TRUE(io_.holds(table[b], seed_base + static_cast<int>(b))) << "block " << b;
    }
    kv_.freeSequence(seq);
  }

  Onboarding startOnboard(SeqId seq, const std::vector<int32_t>& prompt, bool disk) {
    return kvcache::startOnboard(kv_, chain_, seq, prompt, disk);
  }
  int finishOnboard(SeqId seq, const std::vector<int32_t>& prompt, uint64_t ticket) {
    return kvcache::finishOnboard(kv_, chain_, seq, prompt, ticket);
  }

  KvTierStats statsOf(KvTier tier) const {
    for (const KvTierStats& s : chain_.stats()) {
      if (s.tier == tier) return s;
    }
    ADD_FAILURE() << "no such tier";
    return {};
  }

  BytesBlockIo io_{kG1Blocks, kChainBlockBytes};
  KvTierChain chain_{io_};
  KvCacheManager kv_{kG1Blocks, kBlockSize};
  KvEventLog log_;
  ManualTier* g3_ = nullptr;
  // 13 tokens: 3 full blocks (the hit is capped below the last token).
  const std::vector<int32_t> a_ = tokens(100, 13);
  const std::vector<int32_t> b_ = tokens(500, 16);
};

TEST_F(KvTierChainTest, EvictedBlocksGoToHostMemoryAndComeBackBitExact) {
  useTiers(8, false);
  compute(1, a_, 10);
  // b needs all 4 blocks: a's 3 cached blocks are evicted into G2.
  compute(2, b_, 50, /*commit=*/false);
  EXPECT_EQ(statsOf(KvTier::kHost).offloads, 3u);
  EXPECT_EQ(chain_.hostTier()->numBlocks(), 3);
  EXPECT_EQ(kv_.allocatePrompt(3, a_), 0);  // gone from G1
  kv_.freeSequence(3);

  const Onboarding onboard = startOnboard(9, a_, /*disk=*/false);
  EXPECT_TRUE(onboard.done);
  EXPECT_EQ(finishOnboard(9, a_, onboard.ticket), 3);
  expectHitsHold(4, a_, 10, 12);
  const KvTierStats host = statsOf(KvTier::kHost);
  EXPECT_EQ(host.hits, 3u);
  EXPECT_EQ(host.onboards, 3u);
  EXPECT_EQ(host.bytes_read, 3 * kChainBlockBytes);
  EXPECT_EQ(host.bytes_written, 3 * kChainBlockBytes);
  EXPECT_EQ(host.read_seconds.count, 3u);
  // the blocks are now in G1 and G2 both, each listed with its tier.
  int device = 0, in_host = 0;
  for (const BlockStored& b : log_.snapshot().blocks) {
    (b.tier == KvTier::kDevice ? device : in_host) += 1;
  }
  EXPECT_EQ(device, 3);
  EXPECT_EQ(in_host, 3);
}

TEST_F(KvTierChainTest, AnEvictedBlockAlreadyBelowIsNotStoredAgain) {
  useTiers(8, false);
  compute(1, a_, 10);
  compute(2, b_, 50, false);
  const Onboarding onboard = startOnboard(9, a_, false);
  ASSERT_TRUE(onboard.done);
  ASSERT_EQ(finishOnboard(9, a_, onboard.ticket), 3);
  compute(3, b_, 50, false);  // evicts the onboarded copies again
  EXPECT_EQ(statsOf(KvTier::kHost).offloads, 3u);
}

TEST_F(KvTierChainTest, DiskLoadsArePendingUntilTheTierCompletesThem) {
  useTiers(0, true);
  compute(1, a_, 10);
  compute(2, b_, 50, false);  // evicts a's blocks straight into G3
  EXPECT_EQ(g3_->numBlocks(), 3);
  // G3 is not looked at without `disk`.
  EXPECT_EQ(startOnboard(9, a_, false).blocks, 0);
  const Onboarding onboard = startOnboard(9, a_, true);
  ASSERT_FALSE(onboard.done);
  EXPECT_EQ(chain_.numLoadsInFlight(), 1);
  ASSERT_TRUE(g3_->waitForPendingLoads(3));
  EXPECT_TRUE(chain_.takeCompleted().empty());
  // the destination blocks are held meanwhile.
  EXPECT_EQ(kv_.numFreeBlocks(), kG1Blocks - 3);
  g3_->completePendingLoads();
  EXPECT_EQ(chain_.takeCompleted(), std::vector<uint64_t>{onboard.ticket});
  EXPECT_EQ(finishOnboard(9, a_, onboard.ticket), 3);
  EXPECT_EQ(chain_.numLoadsInFlight(), 0);
  expectHitsHold(3, a_, 10, 12);
  EXPECT_EQ(statsOf(KvTier::kDisk).onboards, 3u);
  EXPECT_EQ(statsOf(KvTier::kDisk).io_mode, "manual");
}

TEST_F(KvTierChainTest, DeviceMemoryLoadsGoThroughStaging) {
  BytesBlockIo device(kG1Blocks, kChainBlockBytes, /*host=*/false);
  KvTierChain chain(device);
  auto g3 = std::make_unique<ManualTier>(kChainBlockBytes);
  ManualTier* disk = g3.get();
  chain.setDiskTier(std::move(g3), "manual");
  KvCacheManager kv(kG1Blocks, kBlockSize);
  kv.setEvictionListener(&chain);
  ASSERT_EQ(kv.allocatePrompt(1, a_), 0);
  ASSERT_TRUE(kv.appendSlots(1, 13).ok());
  for (size_t b = 0; b < 4; ++b) device.fill(kv.blockTable(1)[b], 10 + static_cast<int>(b));
  kv.commitFullBlocks(1, a_);
  kv.freeSequence(1);
  ASSERT_EQ(kv.allocatePrompt(2, b_), 0);
  ASSERT_TRUE(kv.appendSlots(2, 16).ok());
  kv.freeSequence(2);
  ASSERT_EQ(disk->numBlocks(), 3);
  const Onboarding onboard = kvcache::startOnboard(kv, chain, 9, a_, true);
  ASSERT_FALSE(onboard.done);
  ASSERT_TRUE(disk->waitForPendingLoads(3));
  disk->completePendingLoads();
  ASSERT_EQ(chain.takeCompleted().size(), 1u);
  ASSERT_EQ(kvcache::finishOnboard(kv, chain, 9, a_, onboard.ticket), 3);
  ASSERT_EQ(kv.allocatePrompt(3, a_), 12);
  for (size_t b = 0; b < 3; ++b) EXPECT_TRUE(device.holds(kv.blockTable(3)[b], 10 + static_cast<int>(b)));
}

TEST_F(KvTierChainTest, AFailedLoadShortensTheHitToWhatLoaded) {
  useTiers(0, true);
  compute(1, a_, 10);
  compute(2, b_, 50, false);
  const Onboarding onboard = startOnboard(9, a_, true);
  ASSERT_FALSE(onboard.done);
  ASSERT_TRUE(g3_->waitForPendingLoads(3));
  g3_->completePendingLoads(/*fail=*/true);
  ASSERT_EQ(chain_.takeCompleted().size(), 1u);
  EXPECT_EQ(finishOnboard(9, a_, onboard.ticket), 0);
  EXPECT_EQ(kv_.allocatePrompt(3, a_), 0);  // recomputed, never served
  kv_.freeSequence(3);
  EXPECT_EQ(statsOf(KvTier::kDisk).load_failures, 3u);
  EXPECT_EQ(kv_.numFreeBlocks(), kG1Blocks);
}

TEST_F(KvTierChainTest, HostEvictionsAreDemotedToDiskAndRefusalsCounted) {
  useTiers(1, true);
  compute(1, a_, 10);
  compute(2, b_, 50, false);
  // G2 holds one block: the two it evicted went down to G3.
  EXPECT_EQ(chain_.hostTier()->numBlocks(), 1);
  EXPECT_EQ(g3_->numBlocks(), 2);
  EXPECT_EQ(statsOf(KvTier::kHost).evictions, 2u);
  EXPECT_EQ(statsOf(KvTier::kDisk).offloads, 2u);
  // the whole prefix comes back, from both tiers.
  const Onboarding onboard = startOnboard(9, a_, true);
  ASSERT_FALSE(onboard.done);
  ASSERT_TRUE(g3_->waitForPendingLoads(2));
  g3_->completePendingLoads();
  ASSERT_EQ(chain_.takeCompleted().size(), 1u);
  ASSERT_EQ(finishOnboard(9, a_, onboard.ticket), 3);
  expectHitsHold(3, a_, 10, 12);

  g3_->refuseStores(true);
  compute(4, b_, 50, false);
  compute(5, tokens(900, 16), 70, false);
  EXPECT_GT(statsOf(KvTier::kDisk).admission_rejections, 0u);
}

TEST_F(KvTierChainTest, BlocksTheDiskFoundAtOpenArePublishedToTheFirstListener) {
  BytesBlockIo io(kG1Blocks, kChainBlockBytes);
  KvTierChain chain(io);
  auto g3 = std::make_unique<ManualTier>(kChainBlockBytes);
  std::vector<std::byte> data(kChainBlockBytes);
  ASSERT_TRUE(g3->store(11, 0, data, [](absl::Status) {}));
  ASSERT_TRUE(g3->store(12, 11, data, [](absl::Status) {}));
  // 13 was recovered but is gone again: not published.
  chain.setDiskTier(std::move(g3), "manual", {{11, 0}, {12, 11}, {13, 12}});
  KvEventLog log;
  chain.setEventListener(&log);
  auto events = log.readAfter(0, 10, std::chrono::milliseconds(0));
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ(std::get<BlockStored>((*events)[0].event), (BlockStored{11, 0, KvTier::kDisk}));
  EXPECT_EQ(std::get<BlockStored>((*events)[1].event), (BlockStored{12, 11, KvTier::kDisk}));
  chain.setEventListener(nullptr);
  chain.setEventListener(&log);  // only once
  EXPECT_EQ(log.lastEventId(), 2u);
}

TEST_F(KvTierChainTest, StoresThatFailToWriteAreCountedApartFromRefusals) {
  useTiers(0, true);
  g3_->failWrites(true);
  compute(1, a_, 10);
  compute(2, b_, 50, false);
  const KvTierStats disk = statsOf(KvTier::kDisk);
  EXPECT_EQ(disk.write_failures, 3u);
  EXPECT_EQ(disk.admission_rejections, 0u);
  EXPECT_EQ(disk.offloads, 0u);
  EXPECT_EQ(startOnboard(9, a_, true).blocks, 0);
}

TEST_F(KvTierChainTest, MaintainKeepsHostMemoryUnderItsHighWatermark) {
  useTiers(20, true);
  std::vector<std::byte> data(kChainBlockBytes);
  for (BlockHash h = 1; h <= 20; ++h) {
    ASSERT_TRUE(chain_.hostTier()->store(h, h - 1, data, [](absl::Status) {}));
  }
  chain_.maintain();
  EXPECT_EQ(chain_.hostTier()->numBlocks(), 18);
  EXPECT_EQ(g3_->numBlocks(), 2);
  EXPECT_TRUE(g3_->contains(1));
  EXPECT_TRUE(g3_->contains(2));
  chain_.maintain();  // below the watermark now: nothing moves
  EXPECT_EQ(chain_.hostTier()->numBlocks(), 18);
}

}  // namespace
}  // namespace tandem::kvcache
