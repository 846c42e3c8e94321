#include "server/engine/remote_prefill_connector.h"

#include <utility>

#include "server/engine/request.h"

namespace tandem::engine {

void RemotePrefillConnector::expect(generation::SeqId id, AllocatedFn on_allocated) {
  std::lock_guard lock(mu_);
  expected_[id] = std::move(on_allocated);
}

RemotePrefillConnector::AllocatedFn RemotePrefillConnector::take(generation::SeqId id) {
  std::lock_guard lock(mu_);
  auto it = expected_.find(id);
  if (it == expected_.end()) return nullptr;
  AllocatedFn fn = std::move(it->second);
  expected_.erase(it);
  return fn;
}

void RemotePrefillConnector::push(Landed landed) {
  std::function<void()> wakeup;
  {
    std::lock_guard lock(mu_);
    landed_.push_back(std::move(landed));
    wakeup = wakeup_;
  }
  if (wakeup) wakeup();
}

void RemotePrefillConnector::complete(generation::SeqId id, generation::TokenOutput first) {
  // a token outside the vocabulary: the prefill worker is broken; prefill here.
  if (first.token < 0 || first.token >= vocab_size_) {
    fail(id);
    return;
  }
  push({.id = id, .first = std::move(first)});
}

void RemotePrefillConnector::fail(generation::SeqId id) {
  {
    std::lock_guard lock(mu_);
    expected_.erase(id);
  }
  push({.id = id});
}

int RemotePrefillConnector::matchedTokens(const Request& req, int num_computed_tokens) {
  {
    std::lock_guard lock(mu_);
    if (!expected_.contains(req.id)) return 0;
  }
  // the whole rest of the prompt, its last token included: the prefill
  // worker computes it and samples the first output token.
  return req.num_prompt_tokens - num_computed_tokens;
}

std::optional<int> RemotePrefillConnector::allocated(const Request& req,
                                                     std::span<const int32_t> block_table,
                                                     int num_computed_tokens,
                                                     int num_external_tokens) {
  (void)num_external_tokens;
  AllocatedFn on_allocated = take(req.id);
  awaiting_.insert(req.id);
  if (on_allocated) {
    on_allocated(Allocation{num_computed_tokens, {block_table.begin(), block_table.end()}});
  }
  return std::nullopt;
}

void RemotePrefillConnector::declined(const Request& req) {
  if (AllocatedFn on_allocated = take(req.id)) on_allocated(std::nullopt);
}

bool RemotePrefillConnector::finished(const Request& req, generation::FinishReason reason) {
  (void)reason;
  awaiting_.erase(req.id);
  (void)take(req.id);
  return false;
}

std::vector<KvConnector::Landed> RemotePrefillConnector::takeLanded() {
  std::vector<Landed> landed;
  {
    std::lock_guard lock(mu_);
    landed.swap(landed_);
  }
  for (const Landed& l : landed) awaiting_.erase(l.id);
  return landed;
}

void RemotePrefillConnector::setWakeup(std::function<void()> wakeup) {
  std::lock_guard lock(mu_);
  wakeup_ = std::move(wakeup);
}

}  // namespace tandem::engine
