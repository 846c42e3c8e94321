// What a run measured: one RequestRecord per request (client-side times),
// and the summary people compare servers by. Definitions follow vLLM's
// `bench serve`, so numbers are comparable:
//   TTFT  request sent -> first output event received
//   ITL   gaps between consecutive output events of a request (all pooled)
//   TPOT  (e2e - TTFT) / (output tokens - 1), per request with >= 2 tokens
//   E2E   request sent -> stream finished
//   goodput  requests per second that met every given SLO (with none given:
//            that succeeded)
// Percentiles interpolate linearly between order statistics (numpy's
// default), so they are exact functions of the samples.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/loadgen/bench_request.h"
#include "bench/loadgen/stream_client.h"

namespace tandem::bench {

struct RequestRecord {
  uint64_t index = 0;
  bool ok = false;
  std::string error_kind;
  double start_s = 0;  // seconds after the run started
  double ttft_ms = 0;
  double e2e_ms = 0;
  std::optional<double> tpot_ms;  // none with fewer than 2 output tokens
  std::vector<double> itl_ms;
  int input_tokens = 0;
  int output_tokens = 0;
  int cached_tokens = -1;  // -1: the server did not say
};

// the record of one finished request. Counts prefer the server's usage
// report and fall back to the workload's intent (input) and the events
// seen (output).
RequestRecord makeRecord(const BenchRequest& req, const StreamResult& res, Clock::time_point run_start);

struct Distribution {
  size_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};

// the p-th percentile (0..100) of ascending `sorted`, linear between order
// statistics: rank p/100 * (n - 1). 0 for an empty vector.
double percentile(const std::vector<double>& sorted, double p);
Distribution distributionOf(std::vector<double> values);

struct Slo {
  std::optional<double> ttft_ms;
  std::optional<double> tpot_ms;
  std::optional<double> e2e_ms;
  bool any() const { return ttft_ms || tpot_ms || e2e_ms; }
};

// "ttft=500,tpot=50[,e2e=2000]" (milliseconds).
absl::StatusOr<Slo> parseSlo(const std::string& text);
// true when `r` succeeded within every SLO given.
bool meetsSlo(const RequestRecord& r, const Slo& slo);

struct Summary {
  size_t completed = 0;
  size_t failed = 0;
  double duration_s = 0;
  Distribution ttft_ms, itl_ms, tpot_ms, e2e_ms;
  double request_throughput = 0;  // completed requests / s
  double input_throughput = 0;    // prompt tokens of completed requests / s
  double output_throughput = 0;   // generated tokens / s
  // requests that met every given SLO (all successful ones without an SLO),
  // and their rate; no rate when the run had no duration.
  std::optional<double> goodput;
  size_t good_requests = 0;
  std::map<std::string, size_t> errors;  // kind -> count
  std::optional<double> cached_token_ratio;  // only when the server reports it
  int64_t total_input_tokens = 0;
  int64_t total_output_tokens = 0;
  double max_concurrency = 0;  // most requests in flight at once
};

// summarizes `records` of a run that lasted `duration_s`.
Summary summarize(const std::vector<RequestRecord>& records, double duration_s, const Slo& slo);

}  // namespace tandem::bench
