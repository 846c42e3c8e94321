#include "common/process/child_process.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

extern char** environ;

namespace tandem::process {
namespace {

constexpr size_t kMaxLine = 64 << 10;

// the child's side of spawn(): only async-signal-safe calls between fork
// and exec. Writes errno to `error_fd` when anything fails.
[[noreturn]] void execChild(const SpawnOptions& options, char* const* argv, char* const* envp,
                            int output_fd, int error_fd, pid_t parent) {
  auto fail = [error_fd] {
    int err = errno;
    (void)!write(error_fd, &err, sizeof err);
    _exit(127);
  };
  if (options.parent_death_signal != 0) {
    if (prctl(PR_SET_PDEATHSIG, options.parent_death_signal) != 0) fail();
    // the parent may have died before prctl took effect.
    if (getppid() != parent) _exit(127);
  }
  if (options.own_process_group && setpgid(0, 0) != 0) fail();
  sigset_t none;
  sigemptyset(&none);
  if (sigprocmask(SIG_SETMASK, &none, nullptr) != 0) fail();
  for (int sig : {SIGINT, SIGTERM, SIGPIPE, SIGCHLD}) ::signal(sig, SIG_DFL);
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull < 0 || dup2(devnull, 0) < 0) fail();
  if (dup2(output_fd, 1) < 0 || dup2(output_fd, 2) < 0) fail();
  execve(argv[0], argv, envp);
  fail();
  _exit(127);  // not reached: fail() exits
}

}  // namespace

ExitStatus ExitStatus::fromWaitStatus(int wait_status) {
  ExitStatus s;
  if (WIFEXITED(wait_status)) s.code = WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) s.signal = WTERMSIG(wait_status);
  return s;
}

std::string ExitStatus::describe() const {
  if (signal != 0) return absl::StrCat("signal ", signal, " (", strsignal(signal), ")");
  return absl::StrCat("exit code ", code);
}

absl::StatusOr<ChildProcessPtr> ChildProcess::spawn(const SpawnOptions& options) {
  if (options.argv.empty()) return absl::InvalidArgumentError("spawn: empty argv");
  // everything the child needs is built before fork: allocation is not
  // async-signal-safe.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  env_strings.insert(env_strings.end(), options.extra_env.begin(), options.extra_env.end());
  std::vector<char*> argv, envp;
  for (const std::string& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : env_strings) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  int output[2], error[2];
  if (pipe2(output, O_CLOEXEC) != 0) return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
  if (pipe2(error, O_CLOEXEC) != 0) {
    int err = errno;
    close(output[0]);
    close(output[1]);
    return absl::InternalError(absl::StrCat("pipe: ", strerror(err)));
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    close(output[0]);
    close(error[0]);
    execChild(options, argv.data(), envp.data(), output[1], error[1], parent);
  }
  const int fork_errno = errno;
  close(output[1]);
  close(error[1]);
  if (pid < 0) {
    close(output[0]);
    close(error[0]);
    return absl::InternalError(absl::StrCat("fork: ", strerror(fork_errno)));
  }
  // exec closes error[1] (close-on-exec): 0 bytes means it succeeded.
  int child_errno = 0;
  ssize_t n;
  do {
    n = read(error[0], &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  close(error[0]);
  if (n > 0) {
    close(output[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot run ", absl::StrJoin(options.argv, " "), ": ", strerror(child_errno)));
  }
  fcntl(output[0], F_SETFL, fcntl(output[0], F_GETFL) | O_NONBLOCK);
  return ChildProcessPtr(new ChildProcess(pid, output[0], options.own_process_group));
}

ChildProcess::~ChildProcess() {
  if (!exited_) {
    signal(SIGKILL);
    int status;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  closeOutput();
}

void ChildProcess::closeOutput() {
  if (output_fd_ >= 0) close(output_fd_);
  output_fd_ = -1;
}

std::vector<std::string> ChildProcess::readLines() {
  std::vector<std::string> lines;
  if (output_fd_ < 0) return lines;
  char buf[16 << 10];
  for (;;) {
    ssize_t n = read(output_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;  // EAGAIN: nothing more for now
    if (n == 0) {      // end of file: every writer is gone
      if (!partial_.empty()) lines.push_back(std::move(partial_));
      partial_.clear();
      closeOutput();
      break;
    }
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] == '\n') {
        lines.push_back(std::move(partial_));
        partial_.clear();
      } else if (partial_.size() < kMaxLine) {
        partial_.push_back(buf[i]);
      }
    }
  }
  return lines;
}

void ChildProcess::signal(int sig) {
  if (exited_) return;
  // the child may not have called setpgid yet right after fork: then the
  // group does not exist and the child itself gets the signal.
  if (own_group_ && kill(-pid_, sig) == 0) return;
  kill(pid_, sig);
}

bool ChildProcess::reap() {
  if (exited_) return true;
  int status;
  pid_t r;
  do {
    r = waitpid(pid_, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r != pid_) return false;
  exited_ = true;
  exit_status_ = ExitStatus::fromWaitStatus(status);
  return true;
}

}  // namespace tandem::process
