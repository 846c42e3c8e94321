#include "tests/stories_oracle.h"

#include "common/mapped_file.h"
#include "common/status.h"
#include "nlohmann/json.hpp"
#include "tests/test_paths.h"

namespace tandem::testing {

const std::vector<OracleCase>& storiesOracle() {
  static const std::vector<OracleCase> cases = [] {
    auto text = readFile(sourceDir() + "/models/stories260K/greedy_oracle.json");
    TANDEM_CHECK(text.ok());
    const nlohmann::json j = nlohmann::json::parse(*text);
    std::vector<OracleCase> out;
    for (const auto& c : j.at("cases")) {
      out.push_back({c.at("prompt").get<std::string>(), c.at("prompt_ids").get<std::vector<int32_t>>(),
                     c.at("completion_ids").get<std::vector<int32_t>>(),
                     c.at("completion_text").get<std::string>()});
    }
    return out;
  }();
  return cases;
}

}  // namespace tandem::testing
