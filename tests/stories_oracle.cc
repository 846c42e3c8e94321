#include "tests/stories_oracle.h"

#include "common/mapped_file.h"
#include "common/status.h"
#include "nlohmann/json.hpp"
#include "tests/test_paths.h"

namespace tandem::testing {

std::vector<OracleCase> loadOracle(const std::string& path) {
  auto text = readFile(path);
  TANDEM_CHECK(text.ok());
  const nlohmann::json j = nlohmann::json::parse(*text);
  std::vector<OracleCase> out;
  for (const auto& c : j.at("cases")) {
    out.push_back({c.at("prompt").get<std::string>(), c.at("prompt_ids").get<std::vector<int32_t>>(),
                   c.at("completion_ids").get<std::vector<int32_t>>(),
                   c.at("completion_text").get<std::string>(),
                   c.value("top2_gaps", std::vector<float>{})});
  }
  return out;
}

const std::vector<OracleCase>& storiesOracle() {
  static const std::vector<OracleCase> cases =
      loadOracle(sourceDir() + "/models/stories260K/greedy_oracle.json");
  return cases;
}

}  // namespace tandem::testing
