// `tandem_gpu_check oracle`: stories260K greedy through the model runner on
// the hip backend, token for token against llama.cpp's continuations
// (models/stories260K/greedy_oracle.json, the oracle the tests use): every
// prompt prefilled in chunks (prefix + chunk attention), all decoded
// together as one batch. Token ids come from the oracle file, so no
// tokenizer is involved.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/hip/hip_backend.h"

namespace tandem::bench::gpu {

struct OracleOptions {
  std::string model_path;   // models/stories260K/gguf/stories260K.gguf
  std::string oracle_path;  // models/stories260K/greedy_oracle.json
  int prompts = 0;          // the first N cases; 0: all
  int tokens = 0;           // the first N completion tokens; 0: all (48)
  int chunk = 7;            // prefill chunk, in tokens
  // > 0 (a quantized model's oracle, which records llama.cpp's top-2
  // logit gaps): teacher-forced decode, each step fed the oracle's token,
  // judged only where llama.cpp's top two logits are tie_gap or more apart
  // (0.05: the rule of tests/server/engine/quantized_oracle_test.cc).
  double tie_gap = 0;
  bool graphs = false;      // decode steps replayed from captured graphs
};

struct OracleResult {
  int prompt_index = 0;
  std::vector<int32_t> want, got;
  std::vector<float> gaps;  // llama.cpp's top-2 gaps (empty: not recorded)
  double tie_gap = 0;
  // every judged position matches: all of them, or (tie_gap > 0) those
  // whose gap is tie_gap or more
  bool exact() const {
    if (tie_gap <= 0) return want == got;
    if (got.size() != want.size() || gaps.size() != want.size()) return false;
    for (size_t i = 0; i < want.size(); ++i) {
      if (gaps[i] >= tie_gap && got[i] != want[i]) return false;
    }
    return true;
  }
};

absl::StatusOr<std::vector<OracleResult>> runOracle(kernels::hip::HipBackend& backend,
                                                    const OracleOptions& options);

}  // namespace tandem::bench::gpu
