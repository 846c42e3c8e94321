// Connector `dry-run`: changes nothing; remembers the counts it was asked
// for (starting from `initial`) and logs each request, so `tandem planner
// run --connector dry-run` shows what the planner would do.
#pragma once

#include <functional>
#include <mutex>
#include <string>

#include "planner/connector.h"

namespace tandem::planner {

class DryRunConnector : public Connector {
 public:
  // `log` gets one line per scale(); default: stderr.
  explicit DryRunConnector(RoleCounts initial, std::function<void(const std::string&)> log = nullptr);

  // Connector
  const char* name() const override { return "dry-run"; }
  absl::StatusOr<RoleCounts> current() override;
  absl::Status scale(Role role, int target) override;

 private:
  std::mutex mu_;
  RoleCounts counts_;  // guarded by mu_
  std::function<void(const std::string&)> log_;
};

}  // namespace tandem::planner
