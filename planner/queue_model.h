// The queueing arithmetic of the `sla` policy: a pool of N identical
// workers fed by Poisson arrivals, each serving one request at a time with
// exponentially distributed service (M/M/N, Erlang C). Prefill is such a
// pool: a prompt waits for a free prefill worker, then takes its prefill time.
// Prompt lengths are heavy-tailed (Mooncake: squared coefficient of
// variation of the prefill time ~7), and arrivals can be burstier than
// Poisson (the Azure 2023 code trace: interarrival scv 2-4 within a 10 s
// interval), so the pool is G/G/N: the wait is M/M/N's stretched by
// (ca^2 + cs^2) / 2 (Allen-Cunneen; ca^2 = 1 is Poisson, the M/G/N of the
// functions' names), and each class of prompt length meets the TTFT SLO when
// its wait fits in what its own prefill leaves of the SLO (a 7 s prompt may
// wait 1 s of an 8 s SLO).
#pragma once

#include <span>

namespace tandem::planner {

// the probability that an arrival waits (Erlang C) at `offered` = rate x mean
// service time (in workers) with `workers`; 1 when offered >= workers.
double erlangC(int workers, double offered);

// the `quantile` (0..1) of the wait before service; +inf when the pool
// cannot keep up (offered >= workers).
double waitQuantileS(int workers, double rate, double service_s, double quantile);

// the fewest workers for which waitQuantileS(.., quantile) <= max_wait_s
// (at least one more than offered, so the queue is stable); 0 when rate is 0.
int workersForWait(double rate, double service_s, double max_wait_s, double quantile);

// one class of prompts: its share of the arrivals and its prefill time.
struct ServiceClass {
  double share = 0;
  double service_s = 0;
};

// G/G/N (Allen-Cunneen), `scv` the service time's and `arrival_scv` the
// interarrival time's squared coefficient of variation (1: Poisson):
// P(wait > t) = C(N, rate x mean) e^{-(N / mean - rate) t x 2 / (arrival_scv + scv)};
// 1 when the pool cannot keep up.
double mgnWaitTail(int workers, double rate, double mean_s, double scv, double t, double arrival_scv = 1);
// its mean wait: M/M/N's x (arrival_scv + scv) / 2; +inf when the pool cannot keep up.
double mgnMeanWaitS(int workers, double rate, double mean_s, double scv, double arrival_scv = 1);

// the share of arrivals whose wait plus own prefill fits in `slo_s`, over
// `classes` (shares summing to 1) at `rate` with `workers`.
double prefillAttainment(int workers, double rate, std::span<const ServiceClass> classes, double slo_s,
                         double arrival_scv = 1);

// the fewest workers whose prefillAttainment reaches `target`, or, when
// the classes whose prefill alone exceeds the SLO leave less than that,
// what the others can reach less a tenth of the miss budget (1 - target):
// no count of workers makes a prompt longer than the SLO fit. 0 when rate is 0.
int workersForAttainment(double rate, std::span<const ServiceClass> classes, double slo_s, double target,
                         double arrival_scv = 1);

}  // namespace tandem::planner
