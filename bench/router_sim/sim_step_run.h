// What the simulated workers of the router and planner simulators share, in
// virtual time: the step in progress (one step, or a run of identical steps
// taken at once while nothing changes the batch), the sequences it works on,
// and what it reports of a request.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace tandem::bench {

// a request at a simulated worker and the tokens it has left, to prefill
// (queued) or to decode (running).
struct SimSequence {
  int id;
  int64_t remaining;
};

// what happened to a request at a simulated worker, and when.
struct SimOutcome {
  enum Kind { kFirstToken, kFinished } kind;
  int request;
  double time;
};

struct SimStepRun {
  static constexpr double kNever = std::numeric_limits<double>::infinity();

  bool active = false;
  double start = 0;
  double duration = 0;  // of one step
  int64_t count = 0;

  // when the run ends (+inf when idle).
  double end() const { return active ? start + duration * static_cast<double>(count) : kNever; }
  // an arrival at `now` cuts the run after the step in progress: returns
  // the whole steps that had ended by then (the caller applies them to its
  // batch); the run keeps only the step in progress.
  int64_t splitAt(double now) {
    if (count <= 1) return 0;
    const int64_t done =
        std::max<int64_t>(0, std::min<int64_t>(count - 1, static_cast<int64_t>(std::floor((now - start) / duration))));
    start += static_cast<double>(done) * duration;
    count = 1;
    return done;
  }
};

}  // namespace tandem::bench
