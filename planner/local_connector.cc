#include "planner/local_connector.h"

#include <signal.h>

#include <cstdio>

#include "absl/strings/str_cat.h"

namespace tandem::planner {
namespace {

// what the supervisor waits beyond the worker's own drain before SIGKILL.
constexpr std::chrono::milliseconds kKillSlack{5000};

}  // namespace

absl::StatusOr<std::unique_ptr<LocalConnector>> LocalConnector::create(LocalConnectorOptions options,
                                                                       process::Supervisor* supervisor) {
  if (options.tandem_binary.empty()) return absl::InvalidArgumentError("local connector: no tandem binary");
  if (options.router_address.empty()) {
    return absl::InvalidArgumentError("local connector: the router's internal address (registry) is required");
  }
  if (options.model.empty()) return absl::InvalidArgumentError("local connector: a model is required");
  process::SupervisorPtr own;
  if (supervisor == nullptr) {
    absl::StatusOr<process::SupervisorPtr> created = process::Supervisor::create({});
    if (!created.ok()) return created.status();
    own = std::move(*created);
    supervisor = own.get();
  }
  return std::unique_ptr<LocalConnector>(new LocalConnector(std::move(options), supervisor, std::move(own)));
}

LocalConnector::LocalConnector(LocalConnectorOptions options, process::Supervisor* supervisor,
                               process::SupervisorPtr own)
    : options_(std::move(options)), own_supervisor_(std::move(own)), supervisor_(supervisor) {}

LocalConnector::~LocalConnector() {
  std::vector<Drain> drains;
  {
    std::lock_guard lock(mu_);
    drains.swap(drains_);
  }
  for (Drain& d : drains) d.thread.join();
  // own_supervisor_ (if any) stops the remaining workers as it goes.
}

absl::StatusOr<RoleCounts> LocalConnector::current() {
  std::lock_guard lock(mu_);
  RoleCounts counts;
  for (Role role : {Role::kPrefill, Role::kDecode}) counts[role] = static_cast<int>(live_[role].size());
  return counts;
}

std::vector<std::string> LocalConnector::workerArgv(Role role, int index) const {
  std::vector<std::string> argv = {options_.tandem_binary, "worker",
                                   "--role", roleName(role),
                                   "--model", options_.model,
                                   "--listen", absl::StrCat(options_.listen_host, ":0"),
                                   "--router", options_.router_address,
                                   "--drain-timeout",
                                   absl::StrCat(std::chrono::duration<double>(options_.drain_timeout).count())};
  argv.insert(argv.end(), options_.worker_flags.begin(), options_.worker_flags.end());
  if (!options_.kv_disk_path.empty()) {
    argv.insert(argv.end(), {"--kv-disk-path", absl::StrCat(options_.kv_disk_path, "/", roleName(role), "-", index)});
  }
  return argv;
}

absl::Status LocalConnector::scale(Role role, int target) {
  if (target < 0) return absl::InvalidArgumentError("a worker count must be >= 0");
  std::vector<std::string> to_drain;
  {
    std::lock_guard lock(mu_);
    std::vector<std::string>& live = live_[role];
    while (static_cast<int>(live.size()) < target) {
      const int index = next_index_[role]++;
      const std::string name = absl::StrCat(roleName(role), "-", index);
      absl::Status status = supervisor_->start({.name = name,
                                                .argv = workerArgv(role, index),
                                                .extra_env = options_.env});
      if (!status.ok()) {
        return absl::FailedPreconditionError(
            absl::StrCat("local connector: cannot start ", name, ": ", status.message()));
      }
      live.push_back(name);
    }
    while (static_cast<int>(live.size()) > target) {
      to_drain.push_back(live.back());
      live.pop_back();
    }
    for (auto it = drains_.begin(); it != drains_.end();) {
      if (it->done->load()) {
        it->thread.join();
        it = drains_.erase(it);
      } else {
        ++it;
      }
    }
    for (const std::string& name : to_drain) {
      ++draining_;
      auto done = std::make_shared<std::atomic<bool>>(false);
      drains_.push_back({std::thread([this, name, done] {
                           drain(name);
                           done->store(true);
                         }),
                         done});
    }
  }
  return absl::OkStatus();
}

void LocalConnector::drain(const std::string& name) {
  std::fprintf(stderr, "tandem planner: local: draining %s (SIGTERM; it leaves routing, finishes its requests, exits)\n",
               name.c_str());
  absl::Status status = supervisor_->stop(name, options_.drain_timeout + kKillSlack);
  std::fprintf(stderr, "tandem planner: local: %s %s\n", name.c_str(),
               status.ok() ? "drained and stopped" : status.ToString().c_str());
  std::lock_guard lock(mu_);
  --draining_;
}

int LocalConnector::draining() const {
  std::lock_guard lock(mu_);
  return draining_;
}

std::vector<std::string> LocalConnector::workerNames(Role role) const {
  std::lock_guard lock(mu_);
  auto it = live_.find(role);
  return it == live_.end() ? std::vector<std::string>{} : it->second;
}

}  // namespace tandem::planner
