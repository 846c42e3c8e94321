#include "common/process/supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "gtest/gtest.h"

namespace tandem::process {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

template <typename Pred>
bool waitUntil(Pred pred, milliseconds timeout = milliseconds(30000)) {
  const auto end = Clock::now() + timeout;
  while (Clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return pred();
}

ChildSpec shellSpec(const std::string& name, const std::string& script, bool restart = true) {
  return ChildSpec{.name = name, .argv = {"/bin/sh", "-c", script}, .restart = restart};
}

// a supervisor whose forwarded output goes to a pipe the test reads, and
// whose callbacks are recorded.
class SupervisorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(pipe2(forward_, O_CLOEXEC | O_NONBLOCK), 0);
  }
  void TearDown() override {
    supervisor_.reset();
    close(forward_[0]);
    close(forward_[1]);
  }

  void create(milliseconds initial_backoff = milliseconds(50), milliseconds max_backoff = milliseconds(5000)) {
    SupervisorOptions o;
    o.forward_fd = forward_[1];
    o.initial_backoff = initial_backoff;
    o.max_backoff = max_backoff;
    o.on_line = [this](const std::string& name, absl::string_view line) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back(name + ": " + std::string(line));
    };
    o.on_start = [this](const std::string& name, pid_t, int) {
      std::lock_guard<std::mutex> lock(mu_);
      starts_.push_back(Clock::now());
    };
    o.on_exit = [this](const std::string& name, ExitStatus status, bool will_restart) {
      std::lock_guard<std::mutex> lock(mu_);
      exits_.push_back(status);
    };
    auto s = Supervisor::create(std::move(o));
    ASSERT_TRUE(s.ok()) << s.status();
    supervisor_ = std::move(*s);
  }

  std::string forwarded() {
    char buf[4096];
    ssize_t n;
    while ((n = read(forward_[0], buf, sizeof buf)) > 0) forwarded_.append(buf, n);
    return forwarded_;
  }
  std::vector<std::string> lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }
  std::vector<ExitStatus> exits() {
    std::lock_guard<std::mutex> lock(mu_);
    return exits_;
  }
  std::vector<Clock::time_point> starts() {
    std::lock_guard<std::mutex> lock(mu_);
    return starts_;
  }
  pid_t pidOf(const std::string& name) { return supervisor_->pid(name).value_or(-1); }

  int forward_[2];
  SupervisorPtr supervisor_;
  std::string forwarded_;
  std::mutex mu_;
  std::vector<std::string> lines_;
  std::vector<ExitStatus> exits_;
  std::vector<Clock::time_point> starts_;
};

TEST_F(SupervisorTest, ForwardsEachLinePrefixedWithItsName) {
  create();
  ASSERT_TRUE(supervisor_->start(shellSpec("prefill-0", "echo one; echo two >&2; printf three", false)).ok());
  ASSERT_TRUE(supervisor_->start(shellSpec("router", "echo ready", false)).ok());
  ASSERT_TRUE(waitUntil([&] { return exits().size() == 2; }));
  const std::string out = forwarded();
  // each child's lines whole and in its order; two children's lines may
  // interleave (the router's can land before prefill-0's unterminated last
  // one, which is forwarded when its pipe closes)
  const size_t one = out.find("[prefill-0] one\n");
  const size_t two = out.find("[prefill-0] two\n");
  const size_t three = out.find("[prefill-0] three\n");
  ASSERT_NE(one, std::string::npos) << out;
  ASSERT_NE(two, std::string::npos) << out;
  ASSERT_NE(three, std::string::npos) << out;
  EXPECT_LT(one, two) << out;
  EXPECT_LT(two, three) << out;
  EXPECT_NE(out.find("[router] ready\n"), std::string::npos) << out;
  // a child that does not restart is logged once when it exits.
  EXPECT_NE(out.find("[supervisor] router exited (exit code 0)\n"), std::string::npos) << out;
  std::vector<std::string> seen = lines();
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"prefill-0: one", "prefill-0: three", "prefill-0: two",
                                             "router: ready"}));
  EXPECT_EQ(pidOf("router"), 0);
}

TEST_F(SupervisorTest, RestartsAChildKilledWithSigkill) {
  create();
  ASSERT_TRUE(supervisor_->start(shellSpec("decode-0", "echo started; exec sleep 60")).ok());
  const pid_t first = pidOf("decode-0");
  ASSERT_GT(first, 0);
  ASSERT_TRUE(waitUntil([&] { return lines().size() == 1; }));
  ASSERT_EQ(kill(first, SIGKILL), 0);
  ASSERT_TRUE(waitUntil([&] { return lines().size() == 2; }));
  EXPECT_EQ(supervisor_->restartCount("decode-0").value(), 1);
  const pid_t second = pidOf("decode-0");
  EXPECT_GT(second, 0);
  EXPECT_NE(second, first);
  ASSERT_EQ(exits().size(), 1u);
  EXPECT_EQ(exits()[0].signal, SIGKILL);
  const std::string out = forwarded();
  EXPECT_NE(out.find("[supervisor] decode-0 exited (signal 9 (Killed)); restarting in 0.1 s\n"),
            std::string::npos) << out;
  EXPECT_NE(out.find("[supervisor] decode-0 restarted (pid " + std::to_string(second) + ", restart 1)"),
            std::string::npos) << out;
}

TEST_F(SupervisorTest, BackoffDoublesUpToItsMaximumInACrashLoop) {
  create(milliseconds(40), milliseconds(160));
  ASSERT_TRUE(supervisor_->start(shellSpec("crashy", "exit 3")).ok());
  ASSERT_TRUE(waitUntil([&] { return starts().size() >= 6; }));
  std::vector<Clock::time_point> t = starts();
  // delays 40, 80, 160, 160, 160 ms (lower bounds: the child also has to run).
  const int expected[] = {40, 80, 160, 160, 160};
  for (int i = 0; i < 5; ++i) {
    EXPECT_GE(t[i + 1] - t[i], milliseconds(expected[i])) << i;
  }
  EXPECT_LT(t[5] - t[4], milliseconds(160 * 2 + 500));
  EXPECT_EQ(exits()[0].code, 3);
}

TEST_F(SupervisorTest, StopSendsSigtermAndDoesNotRestart) {
  create();
  ASSERT_TRUE(supervisor_->start(shellSpec("router",
      "trap 'echo got-term; exit 0' TERM; echo ready; while :; do sleep 0.05; done")).ok());
  ASSERT_TRUE(waitUntil([&] { return !lines().empty(); }));
  const auto begin = Clock::now();
  ASSERT_TRUE(supervisor_->stop("router", milliseconds(5000)).ok());
  EXPECT_LT(Clock::now() - begin, milliseconds(2000));
  EXPECT_EQ(lines().back(), "router: got-term");
  ASSERT_EQ(exits().size(), 1u);
  EXPECT_TRUE(exits()[0].clean());
  EXPECT_EQ(pidOf("router"), 0);
  std::this_thread::sleep_for(milliseconds(200));  // > the backoff
  EXPECT_EQ(pidOf("router"), 0);
  EXPECT_EQ(starts().size(), 1u);
}

TEST_F(SupervisorTest, SendsSigkillToAChildIgnoringSigtermAfterTheTimeout) {
  create();
  ASSERT_TRUE(supervisor_->start(shellSpec("stubborn",
      "trap '' TERM; echo ready; while :; do sleep 0.05; done")).ok());
  ASSERT_TRUE(waitUntil([&] { return !lines().empty(); }));
  const auto begin = Clock::now();
  ASSERT_TRUE(supervisor_->stop("stubborn", milliseconds(300)).ok());
  const auto took = Clock::now() - begin;
  EXPECT_GE(took, milliseconds(300));
  EXPECT_LT(took, milliseconds(2000));
  ASSERT_EQ(exits().size(), 1u);
  EXPECT_EQ(exits()[0].signal, SIGKILL);
  EXPECT_NE(forwarded().find("[supervisor] stubborn did not exit after SIGTERM; sending SIGKILL"),
            std::string::npos);
}

TEST_F(SupervisorTest, StopAllReapsEveryChildLeavingNoZombies) {
  create();
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(supervisor_->start(shellSpec("w" + std::to_string(i), "exec sleep 60")).ok());
  }
  ASSERT_TRUE(supervisor_->start(shellSpec("done", "exit 0", false)).ok());
  ASSERT_TRUE(waitUntil([&] { return exits().size() == 1; }));
  supervisor_->stopAll(milliseconds(2000));
  EXPECT_EQ(exits().size(), 5u);
  for (const std::string& name : supervisor_->names()) EXPECT_EQ(pidOf(name), 0) << name;
  // every child was waited for: this process has none left.
  int status;
  EXPECT_EQ(waitpid(-1, &status, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
}

TEST_F(SupervisorTest, DestroyingTheSupervisorStopsItsChildren) {
  create();
  ASSERT_TRUE(supervisor_->start(shellSpec("a", "exec sleep 60")).ok());
  const pid_t pid = pidOf("a");
  supervisor_.reset();
  EXPECT_NE(kill(pid, 0), 0);  // reaped: the pid is gone
  int status;
  EXPECT_EQ(waitpid(-1, &status, WNOHANG), -1);
}

TEST_F(SupervisorTest, RestartUsesTheArgvSetLast) {
  create();
  ASSERT_TRUE(supervisor_->start(shellSpec("router", "echo first; exec sleep 60")).ok());
  ASSERT_TRUE(waitUntil([&] { return lines().size() == 1; }));
  ASSERT_TRUE(supervisor_->setArgv("router", {"/bin/sh", "-c", "echo second; exec sleep 60"}).ok());
  kill(pidOf("router"), SIGKILL);
  ASSERT_TRUE(waitUntil([&] { return lines().size() == 2; }));
  EXPECT_EQ(lines()[1], "router: second");
}

TEST_F(SupervisorTest, RejectsDuplicateNamesUnknownNamesAndMissingBinaries) {
  create();
  ASSERT_TRUE(supervisor_->start(shellSpec("a", "exec sleep 60")).ok());
  EXPECT_EQ(supervisor_->start(shellSpec("a", "exec sleep 60")).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(supervisor_->pid("b").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(supervisor_->stop("b", milliseconds(10)).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(supervisor_->start(ChildSpec{.name = "c", .argv = {"/nonexistent/x"}}).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(supervisor_->pid("c").status().code(), absl::StatusCode::kNotFound);
  // a stopped name can be started again.
  ASSERT_TRUE(supervisor_->stop("a", milliseconds(1000)).ok());
  EXPECT_TRUE(supervisor_->start(shellSpec("a", "exec sleep 60")).ok());
  EXPECT_GT(pidOf("a"), 0);
}

TEST(SelfExecutableTest, NamesThisTestBinary) {
  auto path = selfExecutable();
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_NE(path->find("common_process_tests"), std::string::npos) << *path;
}

}  // namespace
}  // namespace tandem::process
