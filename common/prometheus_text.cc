#include "common/prometheus_text.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tandem {
namespace {

bool parseValue(absl::string_view text, double* value) {
  if (text == "+Inf" || text == "Inf") {
    *value = std::numeric_limits<double>::infinity();
    return true;
  }
  if (text == "-Inf") {
    *value = -std::numeric_limits<double>::infinity();
    return true;
  }
  if (text == "NaN") {
    *value = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  return absl::SimpleAtod(text, value);
}

// the exposition format's names: a metric's [a-zA-Z_:][a-zA-Z0-9_:]*, a
// label's the same without ':'.
bool validName(absl::string_view name, bool metric) {
  if (name.empty() || absl::ascii_isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [metric](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || (metric && c == ':');
  });
}

// `{a="x",b="y"}` (the braces stripped) into labels; false when malformed.
bool parseLabels(absl::string_view text, MetricLabels* labels) {
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ',' || text[i] == ' ')) ++i;
    if (i == text.size()) break;
    const size_t eq = text.find('=', i);
    if (eq == absl::string_view::npos || eq + 1 >= text.size() || text[eq + 1] != '"') return false;
    std::string name(absl::StripAsciiWhitespace(text.substr(i, eq - i)));
    if (!validName(name, /*metric=*/false)) return false;
    std::string value;
    size_t j = eq + 2;
    for (; j < text.size() && text[j] != '"'; ++j) {
      if (text[j] == '\\' && j + 1 < text.size()) {
        ++j;
        value += text[j] == 'n' ? '\n' : text[j];
      } else {
        value += text[j];
      }
    }
    if (j >= text.size()) return false;
    (*labels)[std::move(name)] = std::move(value);
    i = j + 1;
  }
  return true;
}

bool includes(const MetricLabels& labels, const MetricLabels& match) {
  for (const auto& [k, v] : match) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

}  // namespace

std::string MetricSample::series() const {
  if (labels.empty()) return name;
  std::string out = name + "{";
  for (const auto& [k, v] : labels) {
    if (out.back() != '{') out += ',';
    absl::StrAppend(&out, k, "=\"");
    for (char c : v) {
      if (c == '\n') {
        out += "\\n";
        continue;
      }
      if (c == '\\' || c == '"') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + "}";
}

absl::StatusOr<MetricsSnapshot> MetricsSnapshot::parse(absl::string_view text) {
  MetricsSnapshot snapshot;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    MetricSample sample;
    absl::string_view rest;
    const size_t brace = line.find('{');
    const size_t space = line.find(' ');
    if (brace != absl::string_view::npos && (space == absl::string_view::npos || brace < space)) {
      const size_t close = line.rfind('}');
      if (close == absl::string_view::npos || close < brace ||
          !parseLabels(line.substr(brace + 1, close - brace - 1), &sample.labels)) {
        return absl::InvalidArgumentError(absl::StrCat("metrics line ", line_no, ": bad labels: ", line));
      }
      sample.name = std::string(line.substr(0, brace));
      rest = line.substr(close + 1);
    } else {
      if (space == absl::string_view::npos) {
        return absl::InvalidArgumentError(absl::StrCat("metrics line ", line_no, ": no value: ", line));
      }
      sample.name = std::string(line.substr(0, space));
      rest = line.substr(space);
    }
    rest = absl::StripAsciiWhitespace(rest);
    // the value, then an optional timestamp.
    absl::string_view value_text = rest.substr(0, rest.find(' '));
    if (!validName(sample.name, /*metric=*/true) || !parseValue(value_text, &sample.value)) {
      return absl::InvalidArgumentError(absl::StrCat("metrics line ", line_no, ": bad sample: ", line));
    }
    snapshot.samples_.push_back(std::move(sample));
  }
  return snapshot;
}

bool MetricsSnapshot::has(absl::string_view name) const {
  return std::any_of(samples_.begin(), samples_.end(),
                     [&](const MetricSample& s) { return s.name == name; });
}

double MetricsSnapshot::sum(absl::string_view name, const MetricLabels& match) const {
  double total = 0;
  for (const MetricSample& s : samples_) {
    if (s.name == name && includes(s.labels, match) && !std::isnan(s.value)) total += s.value;
  }
  return total;
}

HistogramBuckets MetricsSnapshot::histogram(absl::string_view name, const MetricLabels& match) const {
  HistogramBuckets h;
  const std::string bucket = absl::StrCat(name, "_bucket");
  std::map<double, double> by_bound;
  for (const MetricSample& s : samples_) {
    if (s.name != bucket || !includes(s.labels, match)) continue;
    auto le = s.labels.find("le");
    double bound;
    if (le == s.labels.end() || !parseValue(le->second, &bound)) continue;
    by_bound[bound] += s.value;
  }
  for (const auto& [bound, count] : by_bound) {
    h.upper_bounds.push_back(bound);
    h.cumulative.push_back(count);
  }
  h.sum = sum(absl::StrCat(name, "_sum"), match);
  h.count = sum(absl::StrCat(name, "_count"), match);
  return h;
}

}  // namespace tandem
