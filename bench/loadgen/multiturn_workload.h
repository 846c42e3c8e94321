// Multi-turn chat sessions: `users` conversations of `turns` turns each.
// Every turn is a new user message of random text (--input-len tokens,
// spread by --range-ratio) asking for --output-len tokens; the runner sends
// it with the whole conversation so far (earlier messages and the server's
// replies), after the previous turn has finished and think_time_s passed.
// Turns come out turn by turn (all first turns, then all second turns...),
// so a session's first turn never waits behind another's later ones.
#pragma once

#include <random>

#include "bench/loadgen/workload.h"

namespace tandem::bench {

class MultiTurnWorkload : public Workload {
 public:
  // needs ctx.tokenizer to turn token ids into message text.
  static absl::StatusOr<WorkloadPtr> create(const WorkloadOptions& options, const WorkloadContext& ctx);

  // Workload
  std::optional<BenchRequest> next() override;
  nlohmann::json describe() const override;

 private:
  MultiTurnWorkload(const WorkloadOptions& options, const WorkloadContext& ctx)
      : options_(options), ctx_(ctx), rng_(options.seed) {}
  int draw(int len);

  WorkloadOptions options_;
  WorkloadContext ctx_;
  std::mt19937_64 rng_;
  uint64_t index_ = 0;
};

}  // namespace tandem::bench
