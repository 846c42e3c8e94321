// KvConnector of the prefill worker's side of a disaggregated prefill: a
// request submitted with it (a prefill for another worker; max_tokens 1)
// reserves blocks for its whole prompt when admitted and is never
// preempted, so the block table it reports is final from its first chunk;
// after each step that computed more of its prompt its watcher gets the
// tokens computed so far and the block table (blocks fully below them never
// change again, so a sender may push them at once; the block holding the
// last prompt token is complete only with the request's final output).
// When it finishes normally its blocks stay allocated, unchanged, until
// release(); cancelled, it frees them at once.
#pragma once

#include <functional>
#include <mutex>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "server/engine/kv_connector.h"

namespace tandem::engine {

class HeldPrefillConnector final : public KvConnector {
 public:
  // on the engine thread, must not block.
  using ProgressFn = std::function<void(int num_computed_tokens, std::span<const int32_t> block_table)>;

  // before `id` is submitted with this connector: who hears of its
  // progress (may be empty). Only a watched request holds its blocks. Any
  // thread.
  void watch(generation::SeqId id, ProgressFn on_progress);
  // frees the blocks `id` holds once finished; before that, it stops
  // watching it (the request runs on and frees its blocks when it ends;
  // cancel it to stop it). Any thread; unknown ids are ignored.
  void release(generation::SeqId id);

  // KvConnector
  bool holdsBlocks() const override { return true; }
  int matchedTokens(const Request& req, int num_computed_tokens) override;
  std::optional<int> allocated(const Request& req, std::span<const int32_t> block_table,
                               int num_computed_tokens, int num_external_tokens) override;
  void progressed(const Request& req, std::span<const int32_t> block_table) override;
  bool finished(const Request& req, generation::FinishReason reason) override;
  std::vector<Landed> takeReleased() override;
  void setWakeup(std::function<void()> wakeup) override;

 private:
  struct Watch {
    ProgressFn on_progress;
    int reported = 0;
  };

  std::mutex mu_;
  absl::flat_hash_map<generation::SeqId, Watch> watches_;  // guarded by mu_
  std::vector<Landed> released_;                // guarded by mu_
  std::function<void()> wakeup_;                           // guarded by mu_
};

}  // namespace tandem::engine
