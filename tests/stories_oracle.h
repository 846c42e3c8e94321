// llama.cpp's greedy continuations of stories260K
// (models/stories260K/greedy_oracle.json), shared by every test that checks
// tokens against them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tandem::testing {

struct OracleCase {
  std::string prompt;
  std::vector<int32_t> prompt_ids;      // with BOS
  std::vector<int32_t> completion_ids;  // 48 greedy tokens
  std::string completion_text;          // continues the prompt (leading space kept)
  // llama.cpp's top logit minus its runner-up at each step, where the file
  // records it (greedy_oracle_q8_0.json); else empty.
  std::vector<float> top2_gaps;
};

// the 8 cases, in file order. Aborts the test binary if the file is unreadable.
const std::vector<OracleCase>& storiesOracle();
// the cases of an oracle file of the same format (e.g.
// models/stories260K/greedy_oracle_q8_0.json), in file order; aborts likewise.
std::vector<OracleCase> loadOracle(const std::string& path);

}  // namespace tandem::testing
