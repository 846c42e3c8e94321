// KvConnector of the decode worker's side of a disaggregated prefill
// (DESIGN: decode first): a request submitted with it is admitted with
// blocks for its whole prompt (its prefix-cache hits, and G2's, reused),
// and then waits (kWaitingForKv) while a prefill worker writes the rest of
// the prompt's KV into those blocks. Whoever moves the KV (the worker's
// RemotePrefill) learns the blocks from the allocation callback and reports
// the outcome with complete() (the KV is in, with the first token sampled
// there: the request commits its prompt to the prefix cache, delivers that
// token and decodes on) or fail() (the blocks written from outside are
// dropped unused and the request prefills here, keeping its own hits).
// When the blocks are not free at admission, or the request scores its
// prompt, the callback gets nullopt and the request prefills here at once.
#pragma once

#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "server/engine/kv_connector.h"

namespace tandem::engine {

class RemotePrefillConnector final : public KvConnector {
 public:
  // where the prompt's KV must be written.
  struct Allocation {
    // leading prompt tokens already here (a multiple of the block size):
    // their blocks need not be sent.
    int num_cached_tokens = 0;
    // the blocks of the whole prompt, block i holding positions
    // [i*B, (i+1)*B); the last may be partial.
    std::vector<int32_t> block_ids;
  };
  // called once on the engine thread when the request is admitted: the
  // blocks to fill, or nullopt when it prefills here instead. Must not
  // block; it may call complete() or fail() at once.
  using AllocatedFn = std::function<void(std::optional<Allocation>)>;

  // first tokens at or above `vocab_size` are refused (treated as fail()).
  explicit RemotePrefillConnector(int vocab_size) : vocab_size_(vocab_size) {}

  // before `id` is submitted with this connector: where its allocation goes.
  // Any thread.
  void expect(generation::SeqId id, AllocatedFn on_allocated);
  // the prompt's KV of `id` is in its blocks and `first` (token, logprob,
  // top_logprobs) is its first token. Any thread; an id no longer waiting
  // (cancelled meanwhile) is ignored when the engine takes it.
  void complete(generation::SeqId id, generation::TokenOutput first);
  // the remote prefill of `id` failed, or `id` was never submitted after
  // expect(): forgets it; a waiting request prefills here. Any thread.
  void fail(generation::SeqId id);
  // requests admitted and waiting for their KV (engine thread).
  int numAwaiting() const { return static_cast<int>(awaiting_.size()); }

  // KvConnector
  int matchedTokens(const Request& req, int num_computed_tokens) override;
  std::optional<int> allocated(const Request& req, std::span<const int32_t> block_table,
                               int num_computed_tokens, int num_external_tokens) override;
  void declined(const Request& req) override;
  bool finished(const Request& req, generation::FinishReason reason) override;
  std::vector<Landed> takeLanded() override;
  void setWakeup(std::function<void()> wakeup) override;

 private:
  // the callback registered for `id` (empty when none), taken out.
  AllocatedFn take(generation::SeqId id);
  void push(Landed landed);

  const int vocab_size_;
  std::mutex mu_;
  absl::flat_hash_map<generation::SeqId, AllocatedFn> expected_;  // guarded by mu_
  std::vector<Landed> landed_;                                     // guarded by mu_
  std::function<void()> wakeup_;                                   // guarded by mu_
  absl::flat_hash_set<generation::SeqId> awaiting_;                // engine thread
};

}  // namespace tandem::engine
