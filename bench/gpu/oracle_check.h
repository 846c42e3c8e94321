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
};

struct OracleResult {
  int prompt_index = 0;
  std::vector<int32_t> want, got;
  bool exact() const { return want == got; }
};

absl::StatusOr<std::vector<OracleResult>> runOracle(kernels::hip::HipBackend& backend,
                                                    const OracleOptions& options);

}  // namespace tandem::bench::gpu
