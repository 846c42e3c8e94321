// One child process: fork + exec of an argv with its stdout and stderr on a
// pipe the parent reads. The building block of process::Supervisor.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tandem::process {

// how a child ended: exit(code) or killed by a signal.
struct ExitStatus {
  int code = -1;    // the exit code, -1 when killed by a signal
  int signal = 0;   // the terminating signal, 0 when it exited

  static ExitStatus fromWaitStatus(int wait_status);
  bool clean() const { return signal == 0 && code == 0; }
  // "exit code 3", "signal 9 (Killed)".
  std::string describe() const;
};

struct SpawnOptions {
  // argv[0] is the file to run (a path; PATH is not searched).
  std::vector<std::string> argv;
  // extra "NAME=value" entries on top of this process's environment.
  std::vector<std::string> extra_env;
  // the signal the child gets when the thread that forked it dies
  // (PR_SET_PDEATHSIG); 0 = none.
  int parent_death_signal = SIGKILL;
  // the child leads its own process group, so a terminal's Ctrl-C reaches
  // only the parent (which stops its children in order), and signals sent
  // by ChildProcess reach the child's own children too.
  bool own_process_group = true;
};

using ChildProcessPtr = std::unique_ptr<class ChildProcess>;

// A running (or exited, not yet reaped) child. Not thread-safe: one owner
// (the Supervisor's monitor thread) drives it. The destructor kills (SIGKILL)
// and reaps a child that was not reaped yet, so no zombie is left behind.
class ChildProcess {
 public:
  // forks and execs; the child's signal mask is emptied and SIGINT, SIGTERM
  // and SIGPIPE go back to their default actions. Fails (and leaves no
  // process behind) when the pipe or fork fails or exec fails (e.g. the file
  // is missing): the exec error comes back through a close-on-exec pipe.
  static absl::StatusOr<ChildProcessPtr> spawn(const SpawnOptions& options);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // the read end of the child's stdout+stderr pipe (non-blocking), or -1
  // once it reached end of file (and was closed).
  int outputFd() const { return output_fd_; }

  // reads what the pipe holds; returns complete lines (without '\n'),
  // keeping a partial line for the next call. At end of file the partial
  // line (if any) is returned and the pipe closed. Lines longer than 64 KiB
  // are cut.
  std::vector<std::string> readLines();

  // sends `sig` to the child (to its process group when it leads one);
  // a no-op once it was reaped.
  void signal(int sig);

  // non-blocking waitpid: true once the child has exited (and is reaped),
  // with its status in exitStatus().
  bool reap();
  bool exited() const { return exited_; }
  ExitStatus exitStatus() const { return exit_status_; }

 private:
  ChildProcess(pid_t pid, int output_fd, bool own_group)
      : pid_(pid), output_fd_(output_fd), own_group_(own_group) {}
  void closeOutput();

  pid_t pid_;
  int output_fd_;
  bool own_group_;
  bool exited_ = false;
  ExitStatus exit_status_;
  std::string partial_;
};

}  // namespace tandem::process
