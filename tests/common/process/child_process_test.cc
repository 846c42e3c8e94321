#include "common/process/child_process.h"

#include <signal.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "gtest/gtest.h"

namespace tandem::process {
namespace {

// true once `pid` is gone or a zombie (its parent died; init reaps it).
bool deadOrZombie(pid_t pid) {
  if (kill(pid, 0) != 0) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string pid_field, comm, state;
  stat >> pid_field >> comm >> state;
  return state == "Z";
}

SpawnOptions shell(const std::string& script) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", script};
  return o;
}

// reads lines until end of file and reaps the child (at most ~5 s).
std::vector<std::string> readAll(ChildProcess& child) {
  std::vector<std::string> lines;
  for (int i = 0; i < 500 && !(child.outputFd() < 0 && child.reap()); ++i) {
    for (std::string& line : child.readLines()) lines.push_back(std::move(line));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return lines;
}

TEST(ChildProcessTest, ReadsStdoutAndStderrAsLinesInOrder) {
  auto child = ChildProcess::spawn(shell("echo one; echo two >&2; printf 'three'; exit 3"));
  ASSERT_TRUE(child.ok()) << child.status();
  EXPECT_EQ(readAll(**child), (std::vector<std::string>{"one", "two", "three"}));
  ASSERT_TRUE((*child)->exited());
  EXPECT_EQ((*child)->exitStatus().code, 3);
  EXPECT_EQ((*child)->exitStatus().signal, 0);
  EXPECT_EQ((*child)->exitStatus().describe(), "exit code 3");
}

TEST(ChildProcessTest, PassesExtraEnvironmentAndEmptiesTheSignalMask) {
  SpawnOptions o = shell("echo \"$TANDEM_TEST_VAR\"; grep SigBlk /proc/self/status");
  o.extra_env = {"TANDEM_TEST_VAR=hello"};
  // a blocked SIGTERM here must not stay blocked in the child.
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, &old);
  auto child = ChildProcess::spawn(o);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(child.ok()) << child.status();
  std::vector<std::string> lines = readAll(**child);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "hello");
  EXPECT_EQ(lines[1], "SigBlk:\t0000000000000000");
}

TEST(ChildProcessTest, SpawnFailsWhenTheFileCannotRun) {
  SpawnOptions o;
  o.argv = {"/nonexistent/tandem-test-binary"};
  auto child = ChildProcess::spawn(o);
  ASSERT_FALSE(child.ok());
  EXPECT_EQ(child.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(child.status().message().find("No such file"), absl::string_view::npos);
}

TEST(ChildProcessTest, SignalKillsTheChildAndItsOwnChildren) {
  auto child = ChildProcess::spawn(shell("sleep 60 & echo $!; wait"));
  ASSERT_TRUE(child.ok()) << child.status();
  std::vector<std::string> lines;
  for (int i = 0; i < 500 && lines.empty(); ++i) {
    lines = (*child)->readLines();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(lines.size(), 1u);
  const pid_t grandchild = std::stoi(lines[0]);
  (*child)->signal(SIGKILL);
  readAll(**child);
  ASSERT_TRUE((*child)->exited());
  EXPECT_EQ((*child)->exitStatus().signal, SIGKILL);
  // the sleep was in the child's process group: it got SIGKILL too.
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    gone = deadOrZombie(grandchild);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone);
}

TEST(ChildProcessTest, DiesWhenTheThreadThatSpawnedItExits) {
  ChildProcessPtr child;
  std::thread([&] {
    auto spawned = ChildProcess::spawn(shell("exec sleep 60"));
    ASSERT_TRUE(spawned.ok()) << spawned.status();
    child = std::move(*spawned);
  }).join();
  ASSERT_NE(child, nullptr);
  bool exited = false;
  for (int i = 0; i < 500 && !exited; ++i) {
    exited = child->reap();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(exited);
  EXPECT_EQ(child->exitStatus().signal, SIGKILL);
}

}  // namespace
}  // namespace tandem::process
