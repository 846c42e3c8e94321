// The planner simulator's decode worker: the shared simulated worker
// (bench/router_sim/sim_worker.h) timed by a measured profile. Steps take
// the profile's ITL at their batch and mean context; a worker prefills
// short uncached prompts itself, one at a time in chunks of 2048 tokens
// added to a step (the engine's chunked prefill); a request joins the batch
// once the batch has room (the profile's max batch) and its final length
// fits in the KV the running ones have not reserved (until then it waits,
// and the wait shows in its ITL); runs of identical steps are at most 32
// steps long, so the context the ITL is read at stays current.
#pragma once

#include "bench/router_sim/sim_worker.h"
#include "planner/profile.h"

namespace tandem::bench {

// `profile` must outlive the workers built with the model.
SimWorkerModel profileModel(const planner::WorkerProfile& profile, int block_size);

}  // namespace tandem::bench
