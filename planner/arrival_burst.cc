#include "planner/arrival_burst.h"

#include <algorithm>

namespace tandem::planner {
namespace {

// the gaps' scv of times[first, last]; 0 with fewer than two gaps.
double gapScv(std::span<const double> times) {
  if (times.size() < 3) return 0;
  double sum = 0, sum_sq = 0;
  for (size_t i = 1; i < times.size(); ++i) {
    const double gap = times[i] - times[i - 1];
    sum += gap;
    sum_sq += gap * gap;
  }
  const double n = static_cast<double>(times.size() - 1);
  const double mean = sum / n;
  if (mean <= 0) return 0;
  return std::max(0.0, sum_sq / n - mean * mean) / (mean * mean);
}

}  // namespace

ArrivalBurst arrivalBurst(std::span<const double> times, double window_s) {
  ArrivalBurst b;
  if (times.empty() || !(window_s > 0)) return b;
  // the window starting at each arrival: the most arrivals any holds.
  size_t best_first = 0, best_count = 0, last = 0;
  for (size_t first = 0; first < times.size(); ++first) {
    last = std::max(last, first);
    while (last + 1 < times.size() && times[last + 1] < times[first] + window_s) ++last;
    if (last - first + 1 > best_count) {
      best_count = last - first + 1;
      best_first = first;
    }
  }
  b.peak_rate = static_cast<double>(best_count) / window_s;
  b.scv = best_count >= 3 ? gapScv(times.subspan(best_first, best_count)) : gapScv(times);
  return b;
}

}  // namespace tandem::planner
