// What a run reports: a summary table for people (stdout) and the JSON
// result file for tools. The JSON of one run holds ttft_ms, itl_ms,
// tpot_ms, e2e_ms (each mean/p50/p90/p99/max in ms), request_throughput
// (req/s), input_throughput and output_throughput (tokens/s), goodput
// (req/s within the SLO, null without one), errors (kind -> count),
// cached_token_ratio (null when the server does not report cached tokens),
// counts, duration, the arrival process and the workload.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "bench/loadgen/runner.h"
#include "nlohmann/json.hpp"

namespace tandem::bench {

nlohmann::json distributionJson(const Distribution& d);
// one run; with_requests adds per-request records (start, ttft, e2e, itl,
// tokens) for offline analysis.
nlohmann::json runJson(const RunResult& run, const Slo& slo, bool with_requests);

// the table printed after a run.
std::string summaryTable(const RunResult& run, const Slo& slo);
// one row per rate of a sweep.
std::string sweepTable(const std::vector<RunResult>& runs, const Slo& slo);

// writes `content` to `path` (replacing it); Internal naming the path on failure.
absl::Status writeTextFile(const std::string& path, const std::string& content);

}  // namespace tandem::bench
