// How bench/gpu times device work: `iters` calls of an op captured once
// into a graph (Backend::captureOps) and replayed `repeats` times, each
// replay followed by one wait; the per-call time is the median replay over
// iters. A graph takes the host's launch cost out, as the peers' timings
// do (bench/gpu/torch_peer.py replays CUDA graphs too). Where capture
// fails the calls are issued in a plain loop, and the entry says so.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/hip/hip_backend.h"
#include "nlohmann/json.hpp"

namespace tandem::bench::gpu {

struct Timing {
  double median_s = 0;  // per call
  std::vector<double> samples_s;
  bool graph = false;   // replayed as a captured graph
};

// op(i) issues call i (0 <= i < iters) on the backend's stream; it is run
// twice uncaptured first (lazy workspaces, the BLAS's plan).
absl::StatusOr<Timing> timeOps(kernels::hip::HipBackend& backend, int repeats, int iters,
                               const std::function<absl::Status(int)>& op);

// {"name", "median_s", "samples_s", "timing", "value", "unit"}
nlohmann::json entry(const std::string& name, const Timing& t, double value,
                     const std::string& unit);

// copies of a buffer to rotate through, so a kernel reading `bytes` a call
// reads them from memory and not from the last-level cache (1 to 32 copies,
// at least 512 MB together).
int rotatingCopies(size_t bytes);

}  // namespace tandem::bench::gpu
