// Traces for `tandem planner simulate --trace KIND:SPEC`, beyond the router
// simulator's mooncake: and azure: (bench/router_sim/sim_trace.h), which it
// reads as they are:
//   azure2024:FILE   the Azure LLM inference trace of 2024 (a week: the
//                    code and conversation services), the 2023 trace's
//                    columns TIMESTAMP,ContextTokens,GeneratedTokens,
//                    "2024-05-10 00:00:00.0000000" (seven decimals; a
//                    "+00:00" or "Z" suffix is read as UTC);
//   burstgpt:FILE    BurstGPT (HPMLL, 2024) as published:
//                    Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
//                    (Timestamp in seconds from the trace's start); a row
//                    with no response tokens is a failed request, skipped;
//   synthetic:KIND   a bursty trace generated with the seed
//                    (synthetic_trace.h: on-off, flash-crowd, diurnal, gamma),
//                    optionally with parameters: synthetic:on-off:rate=40,duration=1800.
// Columns are found by their header's names (any order, any case); a
// malformed row fails naming its line. The rows record no content: every
// prompt is its own chain of blocks (no prefix sharing). Arrivals are sorted
// and start at 0 (the earliest row).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "bench/router_sim/sim_trace.h"

namespace tandem::bench {

enum class TokenTraceFormat { kAzure2024, kBurstGpt };

// a token-count trace's rows from `text` (the file's contents; `name` names
// it in errors), with prompts of `block_size` blocks.
absl::StatusOr<SimTrace> parseTokenTrace(std::string_view text, TokenTraceFormat format, const std::string& name,
                                         int block_size);

// any KIND:SPEC above, or mooncake:/azure: (loadSimTrace). `seed` seeds
// the synthetic ones.
absl::StatusOr<SimTrace> loadPlannerTrace(const std::string& spec, int block_size, uint64_t seed);

// the requests arriving in [start_s, start_s + length_s), moved to start
// at 0 (length_s <= 0: to the end). For a slice of a week-long trace.
SimTrace windowTrace(const SimTrace& trace, double start_s, double length_s);

// a prompt of `tokens` tokens that shares no block with any other: a chain
// of its own, named by `id`.
std::vector<kvcache::BlockHash> uniquePromptBlocks(uint64_t id, int64_t tokens, int block_size);

}  // namespace tandem::bench
