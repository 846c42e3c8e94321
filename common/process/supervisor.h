// A process supervisor: runs named child processes, forwards their output
// line by line (prefixed "[name] "), restarts a child that exits when it was
// not asked to (backoff 0.5 s doubling to 5 s), and stops children with
// SIGTERM, then SIGKILL after a timeout. Used by `tandem serve` (router and
// workers) and by the planner's local connector (workers).
//
// One monitor thread polls the children's pipes, reaps them and forks every
// child (so PR_SET_PDEATHSIG, which fires when the forking *thread* dies,
// ties the children to the supervisor's lifetime, not to a caller's thread).
// Every child is reaped: no zombies once stop()/stopAll() returned or the
// supervisor was destroyed.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/process/child_process.h"

namespace tandem::process {

struct ChildSpec {
  // unique among the supervisor's children; the prefix of forwarded lines.
  std::string name;
  // argv[0] is the file to run; see selfExecutable().
  std::vector<std::string> argv;
  std::vector<std::string> extra_env;  // "NAME=value"
  // restart when it exits (with any status) unless stop() asked for it.
  bool restart = true;
};

struct SupervisorOptions {
  // where forwarded lines go ("[name] line\n"); -1 = nowhere.
  int forward_fd = 2;
  // called on the monitor thread for each line a child prints (without the
  // prefix and '\n'), after it was forwarded. Callbacks may call setArgv(),
  // pid(), restartCount() and start() (of another name); they must not call
  // stop() or stopAll(), which wait for this thread.
  std::function<void(const std::string& name, absl::string_view line)> on_line;
  // called on the monitor thread after a child was (re)started.
  std::function<void(const std::string& name, pid_t pid, int restarts)> on_start;
  // called on the monitor thread after a child exited and was reaped,
  // with `will_restart` false when it was stopped or does not restart.
  std::function<void(const std::string& name, ExitStatus status, bool will_restart)> on_exit;
  std::chrono::milliseconds initial_backoff{500};
  std::chrono::milliseconds max_backoff{5000};
  // a child that ran this long before exiting restarts after
  // initial_backoff again (the backoff only grows for crash loops).
  std::chrono::milliseconds stable_after{10000};
  // how often the monitor thread looks for exited children.
  std::chrono::milliseconds reap_interval{20};
};

using SupervisorPtr = std::unique_ptr<class Supervisor>;

class Supervisor {
 public:
  static absl::StatusOr<SupervisorPtr> create(SupervisorOptions options);
  // stops every child (SIGTERM, 5 s, SIGKILL) and joins the monitor thread.
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // starts a child now. AlreadyExists for a name in use, FailedPrecondition
  // when its exec fails (then it is not kept), InvalidArgument for an empty
  // argv. Logs and restarts it when it exits later (spec.restart).
  absl::Status start(ChildSpec spec);

  // the argv the next restart of `name` uses (e.g. a child that bound port
  // 0 restarts on the port it got). NotFound for an unknown name.
  absl::Status setArgv(const std::string& name, std::vector<std::string> argv);

  // the running child's pid; 0 while it is down (waiting for its restart)
  // or stopped; NotFound for an unknown name.
  absl::StatusOr<pid_t> pid(const std::string& name) const;
  // how many times `name` was restarted (0 for the first run).
  absl::StatusOr<int> restartCount(const std::string& name) const;
  std::vector<std::string> names() const;

  // stops `name` for good: SIGTERM, then SIGKILL when it has not exited
  // after `timeout`; returns once it was reaped (its output forwarded), or
  // at once when it was not running. The name stays known (pid() == 0).
  absl::Status stop(const std::string& name, std::chrono::milliseconds timeout);
  // stops every child at once (SIGTERM to all, SIGKILL to those left after
  // `timeout`); returns once all were reaped.
  void stopAll(std::chrono::milliseconds timeout);

 private:
  class Impl;
  explicit Supervisor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// the path of the running executable (/proc/self/exe resolved), so a
// process can start more of itself (`tandem router`, `tandem worker`).
absl::StatusOr<std::string> selfExecutable();

}  // namespace tandem::process
