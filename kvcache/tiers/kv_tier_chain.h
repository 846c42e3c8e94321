// The tiers below the engine's pool and the policy that moves blocks
// between them (issue 14):
//
//   G1  the engine's BlockPool (KvBlockIo gives its bytes)
//    │ ▲  offload: a cached block G1 evicts is copied into the top tier
//    ▼ │  onboard: a prompt's blocks found below G1 are loaded back into G1
//   G2  HostTier (optional)                 sync memcpy, LRU
//    │    demote: G2's LRU evictions, and its blocks above the high
//    ▼    watermark, are offered to G3 (G3's admission may refuse)
//   G3  any LowerTier (optional; the disk tier)   asynchronous
//
// With only one of G2/G3 that one is the top tier. Each tier keeps blocks
// by hash and publishes BlockStored/BlockRemoved with its own tier through
// the chain to one listener, so a block may be listed in several tiers at
// once (each listing is true). The chain keeps the counters of each tier
// (KvTierStats).
//
// Threads: everything except the callbacks of asynchronous tiers runs on
// the engine thread. Loads that a tier completes on its own thread are
// queued; the engine thread collects them with takeCompleted() and
// finishLoads(), woken by the completion wakeup.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "kvcache/block_eviction_listener.h"
#include "kvcache/tiers/host_tier.h"
#include "kvcache/tiers/kv_block_io.h"
#include "kvcache/tiers/kv_tier_stats.h"
#include "kvcache/tiers/lower_tier.h"

namespace tandem::kvcache {

struct KvTierPolicy {
  // with a G3, G2 is kept at or below high_watermark of its capacity by
  // demoting its least-recently-used blocks down to low_watermark between
  // steps, at most max_demotions_per_step at a time (bounds the pause).
  double high_watermark = 0.95;
  double low_watermark = 0.90;
  int max_demotions_per_step = 64;
};

class KvTierChain final : public BlockEvictionListener, private KvEventListener {
 public:
  // `g1` (not owned) must outlive the chain.
  explicit KvTierChain(KvBlockIo& g1, KvTierPolicy policy = {});
  // destroys G3 first (it finishes or drops its work and joins its threads,
  // so no callback runs afterwards), then G2.
  ~KvTierChain() override;

  KvTierChain(const KvTierChain&) = delete;
  KvTierChain& operator=(const KvTierChain&) = delete;

  // installs the tiers (before use). blockBytes() must equal G1's.
  void setHostTier(std::unique_ptr<HostTier> g2);
  // `io_mode` labels G3's metrics (e.g. "uring", "threads"). `recovered`:
  // the (hash, parent) of blocks G3 found at open (a restart), published as
  // BlockStored{.., kDisk} to the first listener set.
  void setDiskTier(std::unique_ptr<LowerTier> g3, std::string io_mode,
                   std::vector<std::pair<BlockHash, BlockHash>> recovered = {});
  bool empty() const { return g2_ == nullptr && g3_ == nullptr; }
  LowerTier* hostTier() const { return g2_.get(); }
  LowerTier* diskTier() const { return g3_.get(); }

  // receives every tier's events; not owned, may be null. thread-safe. the
  // first non-null listener also gets G3's recovered blocks still held.
  void setEventListener(KvEventListener* listener);
  // called (on a tier's thread) when loads started by startLoads complete
  // there; must be cheap (e.g. wake the engine loop). null to stop. after
  // this returns, the previous wakeup is never called again.
  void setCompletionWakeup(std::function<void()> wakeup);

  // BlockEvictionListener: copies the evicted G1 block into the top tier
  // (nothing when that tier holds the hash already).
  void onEvict(BlockId id, BlockHash hash, BlockHash parent_hash) override;

  // the first tier holding `hash`: G2, then G3 when `include_disk`.
  std::optional<KvTier> locate(BlockHash hash, bool include_disk) const;

  struct Load {
    BlockHash hash = 0;
    BlockId dst = 0;  // a G1 block held by the caller until finishLoads
  };
  struct Started {
    uint64_t ticket = 0;
    // every load completed before startLoads returned (G2 only): call
    // finishLoads(ticket) now; the ticket never shows in takeCompleted().
    bool done = false;
  };
  // loads each block from the first tier holding it into its G1 block.
  Started startLoads(std::span<const Load> loads);
  // tickets whose loads completed on a tier's thread since the last call.
  std::vector<uint64_t> takeCompleted();
  // for a completed ticket: puts staged bytes into G1 and returns, per load,
  // whether its block now holds the KV (a failed load's block holds
  // garbage). forgets the ticket; an unknown one gives an empty list.
  std::vector<bool> finishLoads(uint64_t ticket);
  int numLoadsInFlight() const { return static_cast<int>(jobs_.size()); }

  // between steps: demotes G2 above its high watermark (see KvTierPolicy).
  void maintain();

  // BlockEvictionListener: the evicted blocks' copies queued since the last
  // call are done and the blocks held by G2. On a device backend onEvict
  // copies a block straight into a reserved G2 slot on G1's transfer stream
  // and returns; this waits for all of them at once (KvBlockIo::flush).
  void settle() override;

  // [G2, G3] as installed. thread-safe.
  std::vector<KvTierStats> stats() const;

 private:
  struct Shared;
  struct LoadJob;
  static constexpr int kHostIndex = 0;
  static constexpr int kDiskIndex = 1;

  void onKvEvent(const KvEvent& event) override;  // KvEventListener, from the tiers
  // stores into tier `index`, counting the outcome.
  void storeInto(int index, BlockHash hash, BlockHash parent, std::span<const std::byte> data);
  LowerTier* tierAt(int index) const { return index == kHostIndex ? g2_.get() : g3_.get(); }

  KvBlockIo& g1_;
  const KvTierPolicy policy_;
  std::shared_ptr<Shared> shared_;
  std::unique_ptr<HostTier> g2_;
  std::unique_ptr<LowerTier> g3_;
  // engine thread only.
  std::vector<std::byte> evict_staging_;
  // evicted blocks on their way into reserved G2 slots, until settle().
  struct PendingEviction {
    BlockHash hash = 0;
    BlockHash parent = 0;
    std::span<std::byte> slot;
  };
  std::vector<PendingEviction> pending_evictions_;
  std::vector<std::pair<BlockHash, BlockHash>> recovered_;
  uint64_t next_ticket_ = 1;
  absl::flat_hash_map<uint64_t, std::shared_ptr<LoadJob>> jobs_;
};

}  // namespace tandem::kvcache
