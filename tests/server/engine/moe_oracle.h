// The synthetic mixture-of-experts models of models/moe and llama.cpp's
// greedy continuations of them (greedy_oracle_<name>-<dtype>.json), shared
// by the tests that run them through the model runner on each backend.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/engine/model_runner.h"
#include "tests/stories_oracle.h"

namespace tandem::testing {

struct MoeOracle {
  std::string name;   // e.g. qwen3moe_e8
  std::string dtype;  // f32, f16, q8_0
  std::string shape;  // the synth shape the file records
  std::vector<OracleCase> cases;
};

// the oracle of models/moe/greedy_oracle_<name>-<dtype>.json.
MoeOracle loadMoeOracle(const std::string& name, const std::string& dtype);
// writes its model (tandem model synth, seed 0, stories260K's vocabulary)
// into `dir` as GGUF (model.gguf) or, `hf`, an HF directory; the path.
std::string synthMoeModel(const MoeOracle& oracle, const std::string& dir, bool hf);

// greedy tokens of `seqs` (indices into oracle.cases) decoded together
// after prefilling each prompt alone, through `runner` (8 sequences of 8
// blocks of 16 tokens): free-running, or teacher-forced (each step fed
// llama.cpp's token). Per case.
std::vector<std::vector<int32_t>> greedyTokens(engine::ModelRunner& runner, const MoeOracle& oracle,
                                               const std::vector<int>& seqs, bool forced);

// the steps where llama.cpp's top two logits are at least `min_gap` apart
// and `got` differs from llama.cpp's token, as "case c step i (gap g)".
std::vector<std::string> clearMismatches(const MoeOracle& oracle, const std::vector<int>& seqs,
                                         const std::vector<std::vector<int32_t>>& got, float min_gap);

inline constexpr int kMoeBlockSize = 16;
inline constexpr int kMoeBlocksPerSeq = 8;
inline constexpr int kMoeSeqs = 8;

}  // namespace tandem::testing
