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
};

// the 8 cases, in file order. Aborts the test binary if the file is unreadable.
const std::vector<OracleCase>& storiesOracle();

}  // namespace tandem::testing
