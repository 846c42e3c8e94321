#include "server/engine/tier_onboard_connector.h"

#include <vector>

#include "common/status.h"
#include "kvcache/prefix_hash.h"
#include "server/engine/request.h"

namespace tandem::engine {
namespace {

// the hashes of the prompt's full blocks [0, end), the last prompt token
// excluded (its logits are always computed, as KvCacheManager::allocatePrompt).
std::vector<kvcache::BlockHash> promptHashes(const Request& req, int block_size) {
  const std::span<const int32_t> prompt = req.prompt();
  if (prompt.size() < 2) return {};
  const size_t blocks = (prompt.size() - 1) / block_size;
  return kvcache::blockHashes(prompt.first(blocks * block_size), block_size);
}

}  // namespace

TierOnboardConnector::TierOnboardConnector(kvcache::KvTierChain& tiers, int block_size)
    : tiers_(tiers), block_size_(block_size) {
  TANDEM_CHECK(block_size > 0);
}

int TierOnboardConnector::matchedTokens(const Request& req, int num_computed_tokens) {
  const std::vector<kvcache::BlockHash> hashes = promptHashes(req, block_size_);
  // a request with its own source of KV takes what is at hand only.
  const bool include_disk = req.kv_source == nullptr;
  size_t b = static_cast<size_t>(num_computed_tokens / block_size_);
  const size_t first = b;
  while (b < hashes.size() && tiers_.locate(hashes[b], include_disk)) ++b;
  return static_cast<int>(b - first) * block_size_;
}

std::optional<int> TierOnboardConnector::allocated(const Request& req,
                                                   std::span<const int32_t> block_table,
                                                   int num_computed_tokens,
                                                   int num_external_tokens) {
  const std::vector<kvcache::BlockHash> hashes = promptHashes(req, block_size_);
  const int first = num_computed_tokens / block_size_;
  const int end = first + num_external_tokens / block_size_;
  TANDEM_CHECK(end <= static_cast<int>(hashes.size()) &&
               end <= static_cast<int>(block_table.size()));
  std::vector<kvcache::KvTierChain::Load> loads;
  for (int b = first; b < end; ++b) loads.push_back({hashes[b], block_table[b]});
  const kvcache::KvTierChain::Started started = tiers_.startLoads(loads);
  if (started.done) return finishLoads(started.ticket);
  tickets_.emplace(started.ticket, req.id);
  by_request_.emplace(req.id, started.ticket);
  return std::nullopt;
}

int TierOnboardConnector::finishLoads(uint64_t ticket) {
  const std::vector<bool> loaded = tiers_.finishLoads(ticket);
  int good = 0;
  while (good < static_cast<int>(loaded.size()) && loaded[good]) ++good;
  onboarded_tokens_ += int64_t{good} * block_size_;
  return good * block_size_;
}

bool TierOnboardConnector::finished(const Request& req, generation::FinishReason reason) {
  (void)reason;
  auto it = by_request_.find(req.id);
  if (it == by_request_.end()) return false;
  // the tier may still write into its blocks: they stay until it is done.
  orphans_.insert(it->second);
  by_request_.erase(it);
  return true;
}

std::vector<KvConnector::Landed> TierOnboardConnector::takeLanded() {
  std::vector<Landed> landed;
  for (uint64_t ticket : tiers_.takeCompleted()) {
    auto it = tickets_.find(ticket);
    if (it == tickets_.end()) continue;
    const generation::SeqId id = it->second;
    tickets_.erase(it);
    if (orphans_.erase(ticket) > 0) {
      // its request is gone; what loaded still reaches the prefix cache.
      released_.push_back({.id = id, .num_tokens = finishLoads(ticket)});
      continue;
    }
    by_request_.erase(id);
    landed.push_back({.id = id, .num_tokens = finishLoads(ticket)});
  }
  return landed;
}

std::vector<KvConnector::Landed> TierOnboardConnector::takeReleased() {
  return std::exchange(released_, {});
}

void TierOnboardConnector::setWakeup(std::function<void()> wakeup) {
  tiers_.setCompletionWakeup(std::move(wakeup));
}

}  // namespace tandem::engine
