// Workload: the sequence of requests a benchmark sends. Implementations:
// random (random_workload.h), ShareGPT conversations (sharegpt_workload.h),
// Mooncake JSONL traces (mooncake_workload.h), Azure LLM CSV traces
// (azure_workload.h) and multi-turn chat sessions (multiturn_workload.h).
//
// Workloads are pulled one request at a time, so an endless one (random,
// bounded by --num-requests or --duration) costs no memory up front.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "bench/loadgen/bench_request.h"
#include "nlohmann/json.hpp"

namespace tandem::tokenizer { class Tokenizer; }

namespace tandem::bench {

class TokenSynth;

struct WorkloadOptions {
  // random and multiturn: lengths are drawn uniformly from
  // [len * (1 - range_ratio), len * (1 + range_ratio)].
  int input_len = 128;
  int output_len = 128;
  double range_ratio = 0.0;
  // random: cycle through (input, output) pairs read from this CSV instead.
  std::string lengths_file;
  // traces: multiply input/output lengths (and Mooncake's block size) to
  // fit a small server; the prefix-sharing structure is kept.
  double length_scale = 1.0;
  // Mooncake: tokens per hash id in the trace (the trace's block size).
  int trace_block_tokens = 512;
  // caps after scaling (0 = none): longer prompts are cut, longer outputs
  // are asked for at the cap.
  int max_input_len = 0;
  int max_output_len = 0;
  // sharegpt: ask for this many tokens instead of the recorded reply length.
  int sharegpt_output_len = 0;
  // multiturn
  int users = 8;
  int turns = 4;
  double think_time_s = 1.0;
  uint64_t seed = 0;
};

// what a workload needs to build prompts: the tokenizer counts and decodes
// text; the synth makes token ids.
struct WorkloadContext {
  const tokenizer::Tokenizer* tokenizer = nullptr;
  const TokenSynth* synth = nullptr;
};

class Workload {
 public:
  virtual ~Workload() = default;
  // the next request (index counts from 0), or nullopt when the workload
  // has no more. Never fails: files are read and checked at creation.
  virtual std::optional<BenchRequest> next() = 0;
  // the workload and its parameters, for the result file.
  virtual nlohmann::json describe() const = 0;
  // true when requests carry trace timestamps (so --rate is optional).
  virtual bool hasTimestamps() const { return false; }
  // true when next() never runs out (the run must be bounded otherwise).
  virtual bool endless() const { return false; }
};
using WorkloadPtr = std::unique_ptr<Workload>;

// builds a workload from --workload's value: "random", "multiturn",
// "sharegpt:FILE", "mooncake:FILE" or "azure:FILE". Fails with
// InvalidArgument for an unknown kind or bad options, NotFound for a
// missing file, and names the line of a malformed file. `ctx` must outlive
// the workload.
absl::StatusOr<WorkloadPtr> createWorkload(const std::string& spec, const WorkloadOptions& options,
                                           const WorkloadContext& ctx);

// lengths after --length-scale and the caps; at least 1.
int scaledLength(int length, double scale, int cap);

}  // namespace tandem::bench
