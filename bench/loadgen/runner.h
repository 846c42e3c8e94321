// Runs one benchmark: pulls requests from a Workload, sends each at the
// time its ArrivalProcess says (or when a concurrency slot frees up),
// through a StreamClient, and records what came back. Multi-turn sessions
// send each turn with the conversation so far, after the previous turn
// finished and its think time passed.
//
// The dispatch loop runs on the calling thread and sleeps until the next
// send time or completion; the client's own thread(s) time the streams, so
// a slow loop never skews a timestamp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/loadgen/arrival.h"
#include "bench/loadgen/metrics.h"
#include "bench/loadgen/stream_client.h"
#include "bench/loadgen/workload.h"
#include "nlohmann/json.hpp"

namespace tandem::tokenizer { class Tokenizer; }

namespace tandem::bench {

class ProgressReporter;

struct RunnerOptions {
  Api api = Api::kCompletions;
  std::string model;
  // stop sending after this many requests / seconds (whichever first);
  // requests in flight then finish. Neither: until the workload ends.
  std::optional<uint64_t> num_requests;
  std::optional<double> duration_s;
  // most requests in flight (0 = no limit); closed-loop arrivals need one.
  int max_concurrency = 0;
  bool ignore_eos = true;
  std::optional<double> temperature;
};

struct RunResult {
  std::string label;           // "rate=4/s", "concurrency=8", "trace"
  std::optional<double> rate;  // offered rate of an open-loop run
  std::string arrival;         // ArrivalProcess::describe()
  nlohmann::json workload;     // Workload::describe()
  std::vector<RequestRecord> records;
  Summary summary;
};

// runs to completion. `tokenizer` decodes token-id prompts for chat
// requests (may be null when the workload gives text). `progress` may be
// null. Fails with InvalidArgument for contradictory options (closed loop
// without a concurrency limit; nothing to bound an endless workload).
absl::StatusOr<RunResult> runBenchmark(Workload& workload, ArrivalProcess& arrivals, StreamClient& client,
                                       const tokenizer::Tokenizer* tokenizer, const RunnerOptions& options,
                                       const Slo& slo, ProgressReporter* progress);

// the request as the API sends it: chat gets the conversation so far and
// the new user message; completions and gRPC get token ids when there is
// no conversation, else the conversation as text.
StreamRequest shapeRequest(const BenchRequest& req, const std::vector<ChatMessage>& history,
                           const tokenizer::Tokenizer* tokenizer, const RunnerOptions& options);

}  // namespace tandem::bench
