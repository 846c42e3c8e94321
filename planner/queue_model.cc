#include "planner/queue_model.h"

#include <algorithm>
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

namespace {

struct Moments {
  double mean = 0, scv = 1;
};

Moments moments(std::span<const ServiceClass> classes) {
  double m1 = 0, m2 = 0;
  for (const ServiceClass& c : classes) {
    m1 += c.share * c.service_s;
    m2 += c.share * c.service_s * c.service_s;
  }
  Moments m;
  m.mean = m1;
  if (m1 > 0) m.scv = std::max(0.0, m2 / (m1 * m1) - 1);
  return m;
}

}  // namespace

double mgnWaitTail(int workers, double rate, double mean_s, double scv, double t, double arrival_scv) {
  if (rate <= 0 || mean_s <= 0) return 0;
  if (rate * mean_s >= workers) return 1;
  const double c = erlangC(workers, rate * mean_s);
  return c * std::exp(-(workers / mean_s - rate) * std::max(0.0, t) * 2 / std::max(1e-9, arrival_scv + scv));
}

double mgnMeanWaitS(int workers, double rate, double mean_s, double scv, double arrival_scv) {
  if (rate <= 0 || mean_s <= 0) return 0;
  if (rate * mean_s >= workers) return std::numeric_limits<double>::infinity();
  return erlangC(workers, rate * mean_s) / (workers / mean_s - rate) * (arrival_scv + scv) / 2;
}

double prefillAttainment(int workers, double rate, std::span<const ServiceClass> classes, double slo_s,
                         double arrival_scv) {
  const Moments m = moments(classes);
  double met = 0;
  for (const ServiceClass& c : classes) {
    if (c.service_s > slo_s) continue;
    met += c.share * (1 - mgnWaitTail(workers, rate, m.mean, m.scv, slo_s - c.service_s, arrival_scv));
  }
  return met;
}

int workersForAttainment(double rate, std::span<const ServiceClass> classes, double slo_s, double target,
                         double arrival_scv) {
  const Moments m = moments(classes);
  if (rate <= 0 || m.mean <= 0) return 0;
  double feasible = 0;
  for (const ServiceClass& c : classes) feasible += c.service_s <= slo_s ? c.share : 0;
  const double aim = std::min(target, feasible - (1 - target) / 10);
  int n = static_cast<int>(std::floor(rate * m.mean)) + 1;
  while (prefillAttainment(n, rate, classes, slo_s, arrival_scv) < aim && n < 1000000) ++n;
  return n;
}

}  // namespace tandem::planner
