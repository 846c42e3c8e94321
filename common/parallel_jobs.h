// Runs independent jobs 0..n-1 on a few threads (the caller's among them)
// and returns when every job ran. For work split into a handful of whole
// runs (the simulators' policies), not for fine-grained loops (the CPU
// backend has its own pool).
#pragma once

#include <cstddef>
#include <functional>

namespace tandem {

// `fn(i)` once for each i in [0, n), on min(n, threads) threads; `threads`
// <= 0 means one per core. `fn` must be safe to call from several threads
// at once for different i.
void runJobs(size_t n, int threads, const std::function<void(size_t)>& fn);

}  // namespace tandem
