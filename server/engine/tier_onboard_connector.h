// KvConnector over the tiers below the pool (kvcache/tiers/kv_tier_chain.h):
// the full prompt blocks that follow a request's prefix-cache hits and sit
// in G2 (host memory) or G3 (disk) are loaded back into blocks the request
// holds. G2's copies complete at once (allocated() returns them); a run
// that touches G3 lands later, read on the tier's threads, while the
// request waits aside (kWaitingForKv) and the others keep stepping. A
// failed load shortens the run: the request computes the rest itself.
//
// A request with its own connector (a remote prefill, a held prefill) is
// offered G2 only: it must know now what it has (G3's reads are slow).
//
// The load's ticket lives here only (ticket → request); a request
// cancelled while its loads run keeps its blocks (finished() holds them:
// the tier may still be writing into them) until the loads complete.
#pragma once

#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "kvcache/tiers/kv_tier_chain.h"
#include "server/engine/kv_connector.h"

namespace tandem::engine {

class TierOnboardConnector final : public KvConnector {
 public:
  // `tiers` (not owned) must outlive the connector.
  TierOnboardConnector(kvcache::KvTierChain& tiers, int block_size);

  // requests waiting for their blocks to come back from G3.
  int numLoading() const { return static_cast<int>(by_request_.size()); }
  // prompt tokens brought back from the tiers into the pool.
  int64_t onboardedTokens() const { return onboarded_tokens_; }

  // KvConnector
  bool everyRequest() const override { return true; }
  int matchedTokens(const Request& req, int num_computed_tokens) override;
  std::optional<int> allocated(const Request& req, std::span<const int32_t> block_table,
                               int num_computed_tokens, int num_external_tokens) override;
  bool finished(const Request& req, generation::FinishReason reason) override;
  // takes the tiers' completed loads: those of live requests land (their
  // leading loaded run), those of cancelled ones are released. call
  // takeLanded() before takeReleased().
  std::vector<Landed> takeLanded() override;
  std::vector<Landed> takeReleased() override;
  void setWakeup(std::function<void()> wakeup) override;

 private:
  // the blocks the loads of `ticket` wrote, as a count of tokens from the
  // first (a failed load ends the run).
  int finishLoads(uint64_t ticket);

  kvcache::KvTierChain& tiers_;
  const int block_size_;
  absl::flat_hash_map<uint64_t, generation::SeqId> tickets_;  // loads in flight
  absl::flat_hash_map<generation::SeqId, uint64_t> by_request_;
  absl::flat_hash_set<uint64_t> orphans_;  // loads of cancelled requests
  std::vector<Landed> released_;
  int64_t onboarded_tokens_ = 0;
};

}  // namespace tandem::engine
