// How bursty one interval's arrivals were, from their times: what the
// interval's mean rate hides. A rate that steps up within the interval (a
// burst's onset, a flash crowd's ramp) averages to a rate no worker count
// sized for it can carry; the `sla` sizing and the simulator's
// perfect-foresight bound size prefill for the busiest part instead.
#pragma once

#include <span>

namespace tandem::planner {

struct ArrivalBurst {
  // arrivals a second in the busiest `window_s` of the interval (sliding);
  // at most interval / window times the mean rate.
  double peak_rate = 0;
  // the squared coefficient of variation of the gaps between the arrivals
  // of that window (of the whole interval when the window holds fewer than
  // three); 0 with fewer than three arrivals in all.
  double scv = 0;
};

// `times`: the interval's arrival times in seconds, sorted.
ArrivalBurst arrivalBurst(std::span<const double> times, double window_s);

}  // namespace tandem::planner
