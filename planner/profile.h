// A worker's measured performance, the numbers the `sla` policy and the
// simulator plan with (`tandem planner profile` writes one; planner/profiles
// ships some): prefill throughput against prompt length, and decode
// inter-token latency (the time of one decode step) against batch size and
// context length, with the KV capacity and largest batch a worker holds.
//
// JSON (all numbers positive; prompt lengths strictly increasing; the
// decode points form a full grid of batches x contexts):
//   {"model": "...", "hardware": "...", "backend": "cpu", "source": "...",
//    "derived": false, "kv_capacity_tokens": N, "max_batch": N,
//    "prefill": [{"prompt_tokens": 128, "tokens_per_s": 9000.0}, ...],
//    "decode":  [{"batch": 1, "context_tokens": 128, "itl_ms": 7.1}, ...]}
// "source" says how the numbers were obtained (measured: the command; derived:
// the published figures and the model). Other keys are kept as they are.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace tandem::planner {

struct PrefillPoint {
  double prompt_tokens = 0;
  double tokens_per_s = 0;
};

struct DecodePoint {
  double batch = 0;
  double context_tokens = 0;
  double itl_ms = 0;
};

class WorkerProfile {
 public:
  // checks the points (see the file comment); InvalidArgument names the fault.
  static absl::StatusOr<WorkerProfile> create(std::vector<PrefillPoint> prefill,
                                              std::vector<DecodePoint> decode,
                                              double kv_capacity_tokens, int max_batch);
  static absl::StatusOr<WorkerProfile> fromJson(const nlohmann::json& json);
  // reads and checks a profile file (NotFound when it cannot be opened).
  static absl::StatusOr<WorkerProfile> load(const std::string& path);

  nlohmann::json toJson() const;
  absl::Status save(const std::string& path) const;

  // prefill throughput (tokens/s) of a prompt of `prompt_tokens`: linear in
  // log(length) between the measured lengths, the nearest one outside them.
  double prefillTokensPerS(double prompt_tokens) const;
  // seconds to prefill `new_tokens` of a prompt `prompt_tokens` long (the
  // rest cached), at that prompt's throughput.
  double prefillSeconds(double new_tokens, double prompt_tokens) const;
  // one decode step of `batch` sequences of `context_tokens` each (ms):
  // bilinear between the grid points, linear extrapolation past the largest
  // batch and context (attention reads grow linearly), nearest below the
  // smallest; never below the smallest measured ITL.
  double decodeItlMs(double batch, double context_tokens) const;
  // the largest batch (1..max_batch, and within the KV capacity at that
  // context) whose ITL stays <= itl_ms; 0 when not even one sequence does.
  int maxBatchForItl(double itl_ms, double context_tokens) const;

  double kvCapacityTokens() const { return kv_capacity_tokens_; }
  int maxBatch() const { return max_batch_; }
  const std::vector<PrefillPoint>& prefill() const { return prefill_; }
  const std::vector<DecodePoint>& decode() const { return decode_; }

  // descriptive keys (model, hardware, backend, source, derived, ...): kept
  // through fromJson/toJson.
  nlohmann::json metadata = nlohmann::json::object();

 private:
  WorkerProfile() = default;

  std::vector<PrefillPoint> prefill_;
  std::vector<DecodePoint> decode_;  // sorted by (batch, context)
  std::vector<double> batches_, contexts_;  // the grid's axes, increasing
  std::vector<double> itl_;                 // [batch index * contexts + context index]
  double kv_capacity_tokens_ = 0;
  int max_batch_ = 0;
  double min_itl_ = 0;
};

}  // namespace tandem::planner
