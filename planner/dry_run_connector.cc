#include "planner/dry_run_connector.h"

#include <cstdio>

#include "absl/strings/str_cat.h"

namespace tandem::planner {

DryRunConnector::DryRunConnector(RoleCounts initial, std::function<void(const std::string&)> log)
    : counts_(initial), log_(std::move(log)) {}

absl::StatusOr<RoleCounts> DryRunConnector::current() {
  std::lock_guard lock(mu_);
  return counts_;
}

absl::Status DryRunConnector::scale(Role role, int target) {
  if (target < 0) return absl::InvalidArgumentError("a worker count must be >= 0");
  std::string line;
  {
    std::lock_guard lock(mu_);
    line = absl::StrCat("dry-run: would scale ", roleName(role), " workers from ", counts_[role], " to ", target);
    counts_[role] = target;
  }
  if (log_) {
    log_(line);
  } else {
    std::fprintf(stderr, "tandem planner: %s\n", line.c_str());
  }
  return absl::OkStatus();
}

}  // namespace tandem::planner
