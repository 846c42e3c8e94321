// The one seam between the scheduler and a request's KV that comes from, or
// goes to, somewhere other than its own computation (as vLLM v1's
// KVConnector, scheduler side). Three implementations:
//   - TierOnboardConnector: prompt blocks found in the host or disk tier
//     below the pool are loaded back into the request's blocks;
//   - RemotePrefillConnector (decode worker): a prefill worker computes the
//     prompt's KV and first token into blocks this engine allocated;
//   - HeldPrefillConnector (prefill worker): a prefill's blocks outlive it
//     until the KV was sent, and each step's progress is reported.
//
// The scheduler calls a connector at fixed points, always on the engine
// thread, between steps or inside one (never concurrently):
//
//   admission  matchedTokens()  how many prompt tokens after the prefix-cache
//              │                hits this connector supplies;
//              ├─ allocated()   the request holds blocks for them now; the
//              │                connector fills them, at once (a count) or
//              │                later (nullopt: the request waits, in the one
//              │                state kWaitingForKv, for takeLanded());
//              └─ declined()    the request computes its prompt itself (no
//                               match, no blocks free, or it scores its prompt);
//   each step  progressed()     (holdsBlocks() only) more of the prompt computed;
//   polled     takeLanded()     waiting requests whose KV landed or failed;
//              takeReleased()   finished requests whose held blocks may go
//                               (with what landed in them meanwhile);
//   the end    finished()       the request finished or was cancelled: true
//                               keeps its blocks until takeReleased names it.
//
// A connector fed from other threads calls the wakeup it was given when it
// has something for takeLanded() or takeReleased(), so an idle engine steps.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "generation/token_output.h"

namespace tandem::engine {

struct Request;

class KvConnector {
 public:
  // what came in for a request waiting for KV.
  struct Landed {
    generation::SeqId id = 0;
    // tokens after the ones computed at allocated() whose KV is now valid
    // (fewer than matched: a shortened run; 0 with no `first`: it failed).
    int num_tokens = 0;
    // the whole prompt landed with its first output token, sampled where it
    // was prefilled; the request decodes on from it.
    std::optional<generation::TokenOutput> first;
  };

  virtual ~KvConnector() = default;

  // consulted for every request (the tiers), not only for the requests
  // submitted with this connector.
  virtual bool everyRequest() const { return false; }
  // requests submitted with this connector reserve blocks for their whole
  // prompt when admitted, are never preempted, and report progressed().
  virtual bool holdsBlocks() const { return false; }

  // prompt tokens after the first `num_computed_tokens` (prefix-cache hits,
  // a multiple of the block size) that this connector can supply for `req`.
  virtual int matchedTokens(const Request& req, int num_computed_tokens) = 0;
  // `req` holds blocks for the matched tokens: block_table covers at least
  // positions [0, num_computed_tokens + num_external_tokens). Returns how
  // many of the external tokens hold KV when it returns (a leading run), or
  // nullopt when they land later (takeLanded).
  virtual std::optional<int> allocated(const Request& req, std::span<const int32_t> block_table,
                                       int num_computed_tokens, int num_external_tokens) = 0;
  // `req` (submitted with this connector) goes on without it.
  virtual void declined(const Request& req) { (void)req; }
  // after a step that computed more of `req`'s prompt (holdsBlocks() only).
  virtual void progressed(const Request& req, std::span<const int32_t> block_table) {
    (void)req;
    (void)block_table;
  }
  // `req` finished (`reason`) or was cancelled (kAbort); true when its
  // blocks must stay allocated until takeReleased() names it.
  virtual bool finished(const Request& req, generation::FinishReason reason) = 0;

  virtual std::vector<Landed> takeLanded() { return {}; }
  // held blocks that may go now; num_tokens: those past the tokens computed
  // when the request finished whose KV landed meanwhile (they are cached
  // before the blocks go).
  virtual std::vector<Landed> takeReleased() { return {}; }
  // called when takeLanded() or takeReleased() has something new; cheap,
  // any thread. null: no wakeup.
  virtual void setWakeup(std::function<void()> wakeup) { (void)wakeup; }
};

}  // namespace tandem::engine
