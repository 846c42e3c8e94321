#include "server/engine/held_prefill_connector.h"

#include <algorithm>
#include <utility>

#include "server/engine/request.h"

namespace tandem::engine {

void HeldPrefillConnector::watch(generation::SeqId id, ProgressFn on_progress) {
  std::lock_guard lock(mu_);
  watches_[id] = Watch{std::move(on_progress), 0};
}

void HeldPrefillConnector::release(generation::SeqId id) {
  std::function<void()> wakeup;
  {
    std::lock_guard lock(mu_);
    watches_.erase(id);
    released_.push_back({.id = id});
    wakeup = wakeup_;
  }
  if (wakeup) wakeup();
}

int HeldPrefillConnector::matchedTokens(const Request& req, int num_computed_tokens) {
  (void)req;
  (void)num_computed_tokens;
  return 0;  // the prefill computes its prompt here: nothing comes from elsewhere.
}

std::optional<int> HeldPrefillConnector::allocated(const Request& req,
                                                   std::span<const int32_t> block_table,
                                                   int num_computed_tokens,
                                                   int num_external_tokens) {
  (void)req;
  (void)block_table;
  (void)num_computed_tokens;
  (void)num_external_tokens;
  return 0;
}

void HeldPrefillConnector::progressed(const Request& req, std::span<const int32_t> block_table) {
  ProgressFn on_progress;
  const int computed = std::min(req.num_computed_tokens, req.num_prompt_tokens);
  {
    std::lock_guard lock(mu_);
    auto it = watches_.find(req.id);
    if (it == watches_.end() || computed <= it->second.reported) return;
    it->second.reported = computed;
    on_progress = it->second.on_progress;
  }
  if (on_progress) on_progress(computed, block_table);
}

bool HeldPrefillConnector::finished(const Request& req, generation::FinishReason reason) {
  std::lock_guard lock(mu_);
  // released before it finished: nobody will release it again.
  const bool watched = watches_.erase(req.id) > 0;
  return watched &&
         (reason == generation::FinishReason::kStop || reason == generation::FinishReason::kLength);
}

std::vector<KvConnector::Landed> HeldPrefillConnector::takeReleased() {
  std::lock_guard lock(mu_);
  return std::exchange(released_, {});
}

void HeldPrefillConnector::setWakeup(std::function<void()> wakeup) {
  std::lock_guard lock(mu_);
  wakeup_ = std::move(wakeup);
}

}  // namespace tandem::engine
