// Where the planner's decisions take effect: `local` (worker processes this
// machine starts and stops), `kubernetes` (the prefill and decode Deployments'
// scale subresource), `dry-run` (decides and logs only).
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "planner/planner_types.h"

namespace tandem::planner {

class Connector {
 public:
  virtual ~Connector() = default;
  virtual const char* name() const = 0;
  // workers per role as the platform sees them (ready and starting; not
  // those draining).
  virtual absl::StatusOr<RoleCounts> current() = 0;
  // asks for `target` workers of `role`. Scaling down drains: a worker
  // leaves routing first, finishes (or migrates) its requests, then stops;
  // no request is lost. Returns once the platform accepted the change, not
  // when the new workers are ready.
  virtual absl::Status scale(Role role, int target) = 0;
};

}  // namespace tandem::planner
