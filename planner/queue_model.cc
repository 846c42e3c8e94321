#include "planner/queue_model.h"

#include <cmath>
#include <limits>

namespace tandem::planner {

double erlangC(int workers, double offered) {
  if (offered <= 0) return 0;
  if (workers <= 0 || offered >= workers) return 1;
  // Erlang B by its stable recurrence, then C from B.
  double b = 1;
  for (int n = 1; n <= workers; ++n) b = offered * b / (n + offered * b);
  return workers * b / (workers - offered * (1 - b));
}

double waitQuantileS(int workers, double rate, double service_s, double quantile) {
  if (rate <= 0 || service_s <= 0) return 0;
  const double offered = rate * service_s;
  if (offered >= workers) return std::numeric_limits<double>::infinity();
  // P(W > t) = C e^{-(N mu - lambda) t}
  const double c = erlangC(workers, offered);
  const double tail = 1 - quantile;
  if (c <= tail) return 0;
  return std::log(c / tail) / (workers / service_s - rate);
}

int workersForWait(double rate, double service_s, double max_wait_s, double quantile) {
  if (rate <= 0 || service_s <= 0) return 0;
  int n = static_cast<int>(std::floor(rate * service_s)) + 1;
  while (waitQuantileS(n, rate, service_s, quantile) > max_wait_s && n < 1000000) ++n;
  return n;
}

}  // namespace tandem::planner
