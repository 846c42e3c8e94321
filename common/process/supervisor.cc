#include "common/process/supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tandem::process {
namespace {

using Clock = std::chrono::steady_clock;

void writeAll(int fd, absl::string_view text) {
  while (!text.empty()) {
    ssize_t n = write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    text.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

class Supervisor::Impl {
 public:
  explicit Impl(SupervisorOptions options) : options_(std::move(options)) {}

  absl::Status init() {
    if (pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
      return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
    }
    thread_ = std::thread([this] { run(); });
    return absl::OkStatus();
  }

  ~Impl() {
    stopAll(std::chrono::seconds(5));
    {
      std::lock_guard<std::mutex> lock(mu_);
      exit_ = true;
    }
    wake();
    thread_.join();
    close(wake_[0]);
    close(wake_[1]);
  }

  absl::Status start(ChildSpec spec) {
    if (spec.argv.empty()) return absl::InvalidArgumentError("start: empty argv");
    if (std::this_thread::get_id() == thread_.get_id()) return spawnNew(std::move(spec));
    auto request = std::make_shared<StartRequest>();
    request->spec = std::move(spec);
    std::unique_lock<std::mutex> lock(mu_);
    starts_.push_back(request);
    wake();
    cv_.wait(lock, [&] { return request->done; });
    return request->result;
  }

  absl::Status setArgv(const std::string& name, std::vector<std::string> argv) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = children_.find(name);
    if (it == children_.end()) return absl::NotFoundError(absl::StrCat("no child named ", name));
    it->second.spec.argv = std::move(argv);
    return absl::OkStatus();
  }

  absl::StatusOr<pid_t> pid(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = children_.find(name);
    if (it == children_.end()) return absl::NotFoundError(absl::StrCat("no child named ", name));
    return it->second.pid;
  }

  absl::StatusOr<int> restartCount(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = children_.find(name);
    if (it == children_.end()) return absl::NotFoundError(absl::StrCat("no child named ", name));
    return it->second.restarts;
  }

  std::vector<std::string> names() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> out;
    for (const auto& [name, child] : children_) out.push_back(name);
    return out;
  }

  absl::Status stop(const std::string& name, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    auto it = children_.find(name);
    if (it == children_.end()) return absl::NotFoundError(absl::StrCat("no child named ", name));
    Child& child = it->second;
    requestStop(child, timeout);
    wake();
    cv_.wait(lock, [&] { return child.stopped; });
    return absl::OkStatus();
  }

  void stopAll(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    for (auto& [name, child] : children_) requestStop(child, timeout);
    wake();
    cv_.wait(lock, [&] {
      return std::all_of(children_.begin(), children_.end(),
                         [](const auto& entry) { return entry.second.stopped; });
    });
  }

 private:
  struct Child {
    ChildSpec spec;
    // owned and used by the monitor thread only; null while down.
    ChildProcessPtr proc;
    pid_t pid = 0;  // proc's pid, readable under mu_
    int restarts = 0;
    Clock::time_point started_at;
    Clock::time_point restart_at;  // while down and waiting to restart
    std::chrono::milliseconds backoff{0};
    bool stopping = false;  // stop asked: no restart
    bool term_sent = false;
    bool kill_sent = false;
    Clock::time_point kill_at;
    bool stopped = false;   // down for good
  };
  struct StartRequest {
    ChildSpec spec;
    absl::Status result;
    bool done = false;
  };

  void wake() { (void)!write(wake_[1], "x", 1); }

  // under mu_.
  void requestStop(Child& child, std::chrono::milliseconds timeout) {
    if (child.stopped || child.stopping) return;
    child.stopping = true;
    child.kill_at = Clock::now() + timeout;
  }

  void log(const std::string& text) {
    if (options_.forward_fd >= 0) writeAll(options_.forward_fd, absl::StrCat("[supervisor] ", text, "\n"));
  }

  static absl::StatusOr<ChildProcessPtr> spawnProcess(const ChildSpec& spec) {
    SpawnOptions spawn;
    spawn.argv = spec.argv;
    spawn.extra_env = spec.extra_env;
    return ChildProcess::spawn(spawn);
  }

  // on the monitor thread.
  absl::Status spawnNew(ChildSpec spec) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = children_.find(spec.name);
      if (it != children_.end() && !it->second.stopped) {
        return absl::AlreadyExistsError(absl::StrCat("a child named ", spec.name, " is running"));
      }
    }
    absl::StatusOr<ChildProcessPtr> proc = spawnProcess(spec);
    if (!proc.ok()) return proc.status();
    const std::string name = spec.name;
    const pid_t pid = (*proc)->pid();
    {
      std::lock_guard<std::mutex> lock(mu_);
      Child& child = children_[name];
      child = Child();
      child.spec = std::move(spec);
      child.proc = std::move(*proc);
      child.pid = pid;
      child.started_at = Clock::now();
      child.backoff = options_.initial_backoff;
    }
    if (options_.on_start) options_.on_start(name, pid, 0);
    return absl::OkStatus();
  }

  void forward(const std::string& name, const std::vector<std::string>& lines) {
    for (const std::string& line : lines) {
      if (options_.forward_fd >= 0) writeAll(options_.forward_fd, absl::StrCat("[", name, "] ", line, "\n"));
      if (options_.on_line) options_.on_line(name, line);
    }
  }

  void handleStarts() {
    std::deque<std::shared_ptr<StartRequest>> starts;
    {
      std::lock_guard<std::mutex> lock(mu_);
      starts.swap(starts_);
    }
    for (auto& request : starts) {
      absl::Status status = spawnNew(std::move(request->spec));
      std::lock_guard<std::mutex> lock(mu_);
      request->result = status;
      request->done = true;
      cv_.notify_all();
    }
  }

  // one child's turn of the monitor loop: output, exit, stop, restart.
  void tend(const std::string& name, Child& child, Clock::time_point now) {
    if (child.proc) {
      forward(name, child.proc->readLines());
      if (child.proc->reap()) {
        forward(name, child.proc->readLines());
        onExited(name, child, now);
      } else {
        std::lock_guard<std::mutex> lock(mu_);
        if (child.stopping && !child.term_sent) {
          child.proc->signal(SIGTERM);
          child.term_sent = true;
        } else if (child.stopping && !child.kill_sent && now >= child.kill_at) {
          log(absl::StrCat(name, " did not exit after SIGTERM; sending SIGKILL"));
          child.proc->signal(SIGKILL);
          child.kill_sent = true;
        }
      }
      return;
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (child.stopped) return;
    if (child.stopping) {
      child.stopped = true;
      cv_.notify_all();
      return;
    }
    if (now < child.restart_at) return;
    const ChildSpec spec = child.spec;
    lock.unlock();
    absl::StatusOr<ChildProcessPtr> proc = spawnProcess(spec);
    lock.lock();
    if (!proc.ok()) {
      const std::chrono::milliseconds delay = nextBackoff(child, now);
      log(absl::StrFormat("%s: %s; trying again in %.1f s", name, proc.status().message(),
                          delay.count() / 1000.0));
      child.restart_at = now + delay;
      return;
    }
    child.proc = std::move(*proc);
    child.pid = child.proc->pid();
    child.started_at = now;
    child.restarts++;
    const pid_t pid = child.pid;
    const int restarts = child.restarts;
    lock.unlock();
    log(absl::StrCat(name, " restarted (pid ", pid, ", restart ", restarts, ")"));
    if (options_.on_start) options_.on_start(name, pid, restarts);
  }

  // under mu_: the delay before the next restart, growing for crash loops.
  std::chrono::milliseconds nextBackoff(Child& child, Clock::time_point now) {
    if (now - child.started_at >= options_.stable_after) child.backoff = options_.initial_backoff;
    const std::chrono::milliseconds delay = child.backoff;
    child.backoff = std::min(child.backoff * 2, options_.max_backoff);
    return delay;
  }

  void onExited(const std::string& name, Child& child, Clock::time_point now) {
    const ExitStatus status = child.proc->exitStatus();
    bool will_restart, asked_to_stop;
    std::chrono::milliseconds delay{0};
    {
      std::lock_guard<std::mutex> lock(mu_);
      asked_to_stop = child.stopping;
      child.proc.reset();
      child.pid = 0;
      child.term_sent = child.kill_sent = false;
      will_restart = child.spec.restart && !child.stopping;
      if (will_restart) {
        delay = nextBackoff(child, now);
        child.restart_at = now + delay;
      }
    }
    if (will_restart) {
      log(absl::StrFormat("%s exited (%s); restarting in %.1f s", name, status.describe(),
                          delay.count() / 1000.0));
    } else if (!asked_to_stop) {
      log(absl::StrCat(name, " exited (", status.describe(), ")"));
    }
    if (options_.on_exit) options_.on_exit(name, status, will_restart);
    if (!will_restart) {
      // after on_exit: stop() returns once the owner has heard of the exit.
      std::lock_guard<std::mutex> lock(mu_);
      child.stopped = true;
      cv_.notify_all();
    }
  }

  void run() {
    for (;;) {
      handleStarts();
      std::vector<pollfd> fds{{wake_[0], POLLIN, 0}};
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (exit_) return;
        for (auto& [name, child] : children_) {
          if (child.proc && child.proc->outputFd() >= 0) {
            fds.push_back({child.proc->outputFd(), POLLIN, 0});
          }
        }
      }
      poll(fds.data(), fds.size(), static_cast<int>(options_.reap_interval.count()));
      char buf[64];
      while (read(wake_[0], buf, sizeof buf) > 0) {
      }
      // children_ only grows, and only on this thread: iterating it here
      // without mu_ is safe; fields are read and written under mu_.
      const Clock::time_point now = Clock::now();
      for (auto& [name, child] : children_) tend(name, child, now);
    }
  }

  SupervisorOptions options_;
  int wake_[2] = {-1, -1};
  std::thread thread_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Child> children_;
  std::deque<std::shared_ptr<StartRequest>> starts_;
  bool exit_ = false;
};

Supervisor::Supervisor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Supervisor::~Supervisor() = default;

absl::StatusOr<SupervisorPtr> Supervisor::create(SupervisorOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options));
  absl::Status status = impl->init();
  if (!status.ok()) return status;
  return SupervisorPtr(new Supervisor(std::move(impl)));
}

absl::Status Supervisor::start(ChildSpec spec) { return impl_->start(std::move(spec)); }
absl::Status Supervisor::setArgv(const std::string& name, std::vector<std::string> argv) {
  return impl_->setArgv(name, std::move(argv));
}
absl::StatusOr<pid_t> Supervisor::pid(const std::string& name) const { return impl_->pid(name); }
absl::StatusOr<int> Supervisor::restartCount(const std::string& name) const {
  return impl_->restartCount(name);
}
std::vector<std::string> Supervisor::names() const { return impl_->names(); }
absl::Status Supervisor::stop(const std::string& name, std::chrono::milliseconds timeout) {
  return impl_->stop(name, timeout);
}
void Supervisor::stopAll(std::chrono::milliseconds timeout) { impl_->stopAll(timeout); }

absl::StatusOr<std::string> selfExecutable() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return absl::InternalError(absl::StrCat("readlink /proc/self/exe: ", strerror(errno)));
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace tandem::process
