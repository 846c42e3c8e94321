// Measures a worker's profile (planner/profile.h) on the engine this
// machine runs (`tandem planner profile`): prefill throughput at several
// prompt lengths (one request of each length, alone, median of repeats) and
// decode inter-token latency at batch sizes x contexts (that many requests
// of that prompt length prefilled, then decode steps timed), on random
// token prompts with the prefix cache off.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/profile.h"
#include "server/engine/engine_assembly.h"

namespace tandem::cli {

struct ProfileSweep {
  // empty: powers of two from 16 up to half the context, then 7/8 of it.
  std::vector<int> prompt_lengths;
  std::vector<int> batches = {1, 2, 4, 8, 16, 32, 64};
  // empty: 1/16, 1/4 and 1/2 of the context.
  std::vector<int> contexts;
  int decode_steps = 8;  // timed per point
  int repeats = 3;       // the median is kept
  uint64_t seed = 1;
};

// runs the sweep on `assembly`'s engine (which must be idle, with prefix
// caching off, and hold max(batches) sequences). `progress` gets a line per
// point. InvalidArgument when a length does not fit the model's context or a
// batch the engine's limits; the engine's errors as they come.
absl::StatusOr<planner::WorkerProfile> measureWorkerProfile(engine::EngineAssembly& assembly,
                                                            const ProfileSweep& sweep,
                                                            const std::function<void(const std::string&)>& progress);

}  // namespace tandem::cli
