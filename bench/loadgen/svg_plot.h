// An SVG picture of a benchmark, readable at a glance: the cumulative
// distributions of TTFT, inter-token latency, TPOT and end-to-end latency
// (one line per run, p50 and p99 marked), and for a sweep over rates, the
// achieved throughput (and goodput) and the latencies against the offered
// rate — where a server saturates is where the lines bend.
// Self-contained SVG 1.1, no scripts or external fonts.
#pragma once

#include <string>
#include <vector>

#include "bench/loadgen/runner.h"

namespace tandem::bench {

// `title` heads the picture (e.g. the URL and model).
std::string renderPlot(const std::vector<RunResult>& runs, const std::string& title);

// ~`count` round tick values covering [lo, hi] (steps of 1, 2 or 5 x 10^k).
std::vector<double> niceTicks(double lo, double hi, int count);

}  // namespace tandem::bench
