#include "bench/loadgen/server_metrics.h"

#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tandem::bench {

std::map<std::string, double> parsePrometheusText(const std::string& text) {
  std::map<std::string, double> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    // the series ends after the closing '}' of its labels (label values
    // may hold spaces) or at the first space.
    size_t end = line.find('{');
    if (end != absl::string_view::npos) {
      end = line.find('}', end);
      if (end == absl::string_view::npos) continue;
      ++end;
    } else {
      end = line.find(' ');
      if (end == absl::string_view::npos) continue;
    }
    absl::string_view series = line.substr(0, end);
    absl::string_view rest = absl::StripAsciiWhitespace(line.substr(end));
    absl::string_view value = rest.substr(0, rest.find(' '));
    double v;
    if (value == "+Inf") {
      v = INFINITY;
    } else if (value == "-Inf") {
      v = -INFINITY;
    } else if (!absl::SimpleAtod(value, &v)) {
      continue;
    }
    out[std::string(series)] = v;
  }
  return out;
}

nlohmann::json metricsDelta(const std::map<std::string, double>& before,
                            const std::map<std::string, double>& after) {
  nlohmann::json delta = nlohmann::json::object();
  for (const auto& [k, v] : after) {
    auto it = before.find(k);
    if (it != before.end() && std::isfinite(v) && std::isfinite(it->second) && v != it->second) {
      delta[k] = v - it->second;
    }
  }
  auto finite = [](const std::map<std::string, double>& m) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [k, v] : m) if (std::isfinite(v)) j[k] = v;
    return j;
  };
  return {{"before", finite(before)}, {"after", finite(after)}, {"delta", delta}};
}

}  // namespace tandem::bench
