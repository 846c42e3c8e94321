// The queueing arithmetic of the `sla` policy: a pool of N identical
// workers fed by Poisson arrivals, each serving one request at a time with
// exponentially distributed service (M/M/N, Erlang C). Prefill is such a
// pool: a prompt waits for a free prefill worker, then takes its prefill time.
#pragma once

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

}  // namespace tandem::planner
