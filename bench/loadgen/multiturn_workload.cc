#include "bench/loadgen/multiturn_workload.h"

#include <cmath>

#include "bench/loadgen/token_synth.h"
#include "text/tokenizer/tokenizer.h"

namespace tandem::bench {

absl::StatusOr<WorkloadPtr> MultiTurnWorkload::create(const WorkloadOptions& options,
                                                      const WorkloadContext& ctx) {
  if (ctx.tokenizer == nullptr) return absl::InvalidArgumentError("multiturn needs a tokenizer");
  if (options.users < 1 || options.turns < 1) return absl::InvalidArgumentError("--users and --turns must be >= 1");
  if (options.input_len < 1 || options.output_len < 1) {
    return absl::InvalidArgumentError("--input-len and --output-len must be >= 1");
  }
  if (options.range_ratio < 0 || options.range_ratio >= 1) {
    return absl::InvalidArgumentError("--range-ratio must be in [0, 1)");
  }
  if (options.think_time_s < 0) return absl::InvalidArgumentError("--think-time must be >= 0");
  return WorkloadPtr(new MultiTurnWorkload(options, ctx));
}

int MultiTurnWorkload::draw(int len) {
  if (options_.range_ratio == 0) return len;
  int lo = std::max(1, static_cast<int>(std::floor(len * (1 - options_.range_ratio))));
  int hi = std::max(lo, static_cast<int>(std::ceil(len * (1 + options_.range_ratio))));
  return std::uniform_int_distribution<int>(lo, hi)(rng_);
}

std::optional<BenchRequest> MultiTurnWorkload::next() {
  uint64_t total = static_cast<uint64_t>(options_.users) * options_.turns;
  if (index_ >= total) return std::nullopt;
  BenchRequest req;
  req.index = index_;
  req.turn = static_cast<int>(index_ / options_.users);
  req.session_id = static_cast<int64_t>(index_ % options_.users);
  req.think_time_s = req.turn > 0 ? options_.think_time_s : 0.0;
  ++index_;
  int in = draw(options_.input_len);
  req.prompt_text = ctx_.tokenizer->decode(ctx_.synth->randomTokens(rng_, in), true);
  req.input_tokens = in;
  req.max_tokens = draw(options_.output_len);
  return req;
}

nlohmann::json MultiTurnWorkload::describe() const {
  return {{"kind", "multiturn"},       {"users", options_.users},
          {"turns", options_.turns},   {"think_time_s", options_.think_time_s},
          {"input_len", options_.input_len}, {"output_len", options_.output_len},
          {"range_ratio", options_.range_ratio}, {"seed", options_.seed}};
}

}  // namespace tandem::bench
