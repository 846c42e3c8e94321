#include "planner/demand_history.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tandem::planner {

DemandHistory::DemandHistory(size_t capacity) : capacity_(std::max<size_t>(1, capacity)) {}

void DemandHistory::add(double demand) {
  demand_.push_back(std::max(0.0, demand));
  while (demand_.size() > capacity_) demand_.pop_front();
}

double DemandHistory::peakQuantile(size_t window, double quantile) const {
  if (demand_.empty()) return 0;
  window = std::max<size_t>(1, window);
  if (demand_.size() <= window) return *std::max_element(demand_.begin(), demand_.end());
  std::vector<double> peaks;
  peaks.reserve(demand_.size() - window + 1);
  for (size_t start = 0; start + window <= demand_.size(); ++start) {
    peaks.push_back(*std::max_element(demand_.begin() + start, demand_.begin() + start + window));
  }
  std::sort(peaks.begin(), peaks.end());
  const double rank = std::ceil(std::clamp(quantile, 0.0, 1.0) * static_cast<double>(peaks.size()));
  const size_t k = std::clamp<size_t>(static_cast<size_t>(rank), 1, peaks.size()) - 1;
  return peaks[k];
}

double DemandHistory::riseQuantile(size_t window, double quantile) const {
  if (demand_.size() < 2) return 0;
  window = std::max<size_t>(1, window);
  const size_t n = demand_.size();
  // the runs ending within the history; all runs when none does.
  const size_t starts = n > window ? n - window : n - 1;
  std::vector<double> rises;
  rises.reserve(starts);
  for (size_t j = 0; j < starts; ++j) {
    const size_t end = std::min(n, j + 1 + window);
    rises.push_back(*std::max_element(demand_.begin() + j + 1, demand_.begin() + end) - demand_[j]);
  }
  std::sort(rises.begin(), rises.end());
  const double rank = std::ceil(std::clamp(quantile, 0.0, 1.0) * static_cast<double>(rises.size()));
  return rises[std::clamp<size_t>(static_cast<size_t>(rank), 1, rises.size()) - 1];
}

}  // namespace tandem::planner
