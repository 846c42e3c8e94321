// DiskTier when the machine says no: a failing write (RLIMIT_FSIZE), a full
// file system at open (a 1 MiB tmpfs), a file system that refuses O_DIRECT
// (ramfs), io_uring forbidden (a seccomp filter), a directory that cannot be
// made. Each runs for real in a child process (gtest death-test machinery,
// exit code 0 = the scenario held), so limits, mounts and filters stay there.
#include <fcntl.h>
#include <liburing.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "kvcache/tiers/disk_record.h"
#include "kvcache/tiers/disk_tier.h"
#include "tests/kvcache/tiers/disk_tier_test_util.h"
#include "tests/test_paths.h"

namespace tandem::kvcache {
namespace {

using testing::blockData;
using testing::kTestBlockBytes;
using testing::loadSync;
using testing::RecordingListener;
using testing::storeSync;
using testing::testOptions;

// in a child: report the failed condition and exit non-zero.
#define CHILD_CHECK(cond)                                                                \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "child check failed (line %d): %s\n", __LINE__, #cond);       \
      std::_Exit(1);                                                                     \
    }                                                                                    \
  } while (0)

bool writeFile(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  return static_cast<bool>(f.flush());
}

// a private mount namespace (as root, else inside a new user namespace) with
// a file system of `type` mounted on `dir`; "" or why it could not be done.
std::string mountPrivately(const std::string& dir, const char* type, const char* data) {
  if (unshare(CLONE_NEWNS) != 0) {
    const uid_t uid = getuid();
    const gid_t gid = getgid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
      return std::string("unshare: ") + std::strerror(errno);
    }
    writeFile("/proc/self/setgroups", "deny");
    writeFile("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1");
    writeFile("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1");
  }
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return std::string("making / private: ") + std::strerror(errno);
  }
  if (mount("tandem-test", dir.c_str(), type, 0, data) != 0) {
    return std::string("mount ") + type + ": " + std::strerror(errno);
  }
  return "";
}

void roundTripOrExit(DiskTier& tier) {
  CHILD_CHECK(storeSync(tier, 1, 0, blockData(1)).ok());
  std::vector<std::byte> back(kTestBlockBytes);
  CHILD_CHECK(loadSync(tier, 1, back).ok());
  CHILD_CHECK(back == blockData(1));
}

int writeFailsMidRun(DiskIoMode io, const std::string& dir) {
  auto opened = DiskTier::open(testOptions(dir, io, 8));
  CHILD_CHECK(opened.ok() && !(*opened)->disabled());
  DiskTier& tier = **opened;
  RecordingListener events;
  tier.setEventListener(&events);
  CHILD_CHECK(storeSync(tier, 1, 0, blockData(1)).ok());
  CHILD_CHECK(storeSync(tier, 2, 1, blockData(2)).ok());
  // the file may not grow past its first two records any more: the third
  // write fails with EFBIG, as a full or failing disk would fail it.
  std::signal(SIGXFSZ, SIG_IGN);
  rlimit lim{};
  CHILD_CHECK(getrlimit(RLIMIT_FSIZE, &lim) == 0);
  lim.rlim_cur = 2 * tier.recordBytes();
  CHILD_CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
  const absl::Status st = storeSync(tier, 3, 2, blockData(3));
  CHILD_CHECK(absl::IsUnavailable(st));
  CHILD_CHECK(tier.disabled());
  CHILD_CHECK(tier.stats().disabled.load());
  CHILD_CHECK(tier.stats().io_errors.load() == 1);
  CHILD_CHECK(tier.disabledReason().find("File too large") != std::string::npos);
  // serving continues: nothing is taken or served any more, nothing crashes.
  CHILD_CHECK(!tier.store(4, 3, blockData(4), [](absl::Status) { std::_Exit(2); }));
  std::vector<std::byte> back(kTestBlockBytes);
  CHILD_CHECK(absl::IsUnavailable(loadSync(tier, 1, back)));
  CHILD_CHECK(tier.numBlocks() == 0);
  CHILD_CHECK(!tier.contains(1));
  const auto ev = events.events();
  CHILD_CHECK(std::find(ev.begin(), ev.end(), KvEvent(BlockRemoved{1, KvTier::kDisk})) != ev.end());
  CHILD_CHECK(std::find(ev.begin(), ev.end(), KvEvent(BlockRemoved{2, KvTier::kDisk})) != ev.end());
  return 0;
}

int fileSystemFullAtOpen(const std::string& dir) {
  const std::string why = mountPrivately(dir, "tmpfs", "size=1m");
  if (!why.empty()) {
    // no mount here: the same ENOSPC-class refusal through the file size limit.
    std::fprintf(stderr, "cannot mount a 1 MiB tmpfs (%s): using RLIMIT_FSIZE\n", why.c_str());
    std::signal(SIGXFSZ, SIG_IGN);
    rlimit lim{};
    CHILD_CHECK(getrlimit(RLIMIT_FSIZE, &lim) == 0);
    lim.rlim_cur = 1 << 20;
    CHILD_CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
  }
  auto o = testOptions(dir, DiskIoMode::kUring, 1);
  o.capacity_bytes = 4 << 20;
  auto opened = DiskTier::open(o);
  CHILD_CHECK(opened.ok());
  DiskTier& tier = **opened;
  CHILD_CHECK(tier.disabled());
  CHILD_CHECK(tier.stats().disabled.load());
  CHILD_CHECK(tier.disabledReason().find("cannot preallocate") != std::string::npos);
  CHILD_CHECK(!tier.store(1, 0, blockData(1), [](absl::Status) { std::_Exit(2); }));
  std::vector<std::byte> back(kTestBlockBytes);
  CHILD_CHECK(absl::IsUnavailable(loadSync(tier, 1, back)));
  CHILD_CHECK(tier.ioModeName() == "none");
  return 0;
}

int directIoRefused(const std::string& dir) {
  const std::string why = mountPrivately(dir, "ramfs", nullptr);
  if (!why.empty()) {
    std::fprintf(stderr, "cannot mount ramfs (%s): the O_DIRECT fallback is NOT exercised\n",
                 why.c_str());
    return 3;
  }
  {
    auto opened = DiskTier::open(testOptions(dir, DiskIoMode::kUring, 4));
    CHILD_CHECK(opened.ok() && !(*opened)->disabled());
    DiskTier& tier = **opened;
    CHILD_CHECK(!tier.stats().direct_io.load());
    CHILD_CHECK(tier.stats().direct_fallback.load());
    CHILD_CHECK(tier.ioModeName().ends_with("+buffered"));
    roundTripOrExit(tier);
  }
  auto reopened = DiskTier::open(testOptions(dir, DiskIoMode::kThreads, 4));
  CHILD_CHECK(reopened.ok() && (*reopened)->recovered().size() == 1);
  return 0;
}

int uringForbidden(const std::string& dir) {
  // what Docker's default profile does: io_uring_setup fails with EPERM.
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(std::size(filter)), filter};
  CHILD_CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
  CHILD_CHECK(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0);
  auto opened = DiskTier::open(testOptions(dir, DiskIoMode::kUring, 4));
  CHILD_CHECK(opened.ok() && !(*opened)->disabled());
  DiskTier& tier = **opened;
  CHILD_CHECK(!tier.stats().uring.load());
  CHILD_CHECK(tier.stats().uring_fallback.load());
  CHILD_CHECK(tier.ioModeName().starts_with("threads+"));
  roundTripOrExit(tier);
  return 0;
}

class DiskTierFaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    dir_ = tandem::testing::makeTempDir();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(DiskTierFaultsTest, FailedWriteDisablesTheUringTierAndServingContinues) {
  EXPECT_EXIT(std::exit(writeFailsMidRun(DiskIoMode::kUring, dir_)), ::testing::ExitedWithCode(0),
              "disabled: write of .* failed: File too large; serving continues without G3");
}

TEST_F(DiskTierFaultsTest, FailedWriteDisablesTheThreadsTierAndServingContinues) {
  EXPECT_EXIT(std::exit(writeFailsMidRun(DiskIoMode::kThreads, dir_)),
              ::testing::ExitedWithCode(0),
              "disabled: write of .* failed: File too large; serving continues without G3");
}

TEST_F(DiskTierFaultsTest, FullFileSystemAtOpenGivesADisabledTier) {
  EXPECT_EXIT(std::exit(fileSystemFullAtOpen(dir_)), ::testing::ExitedWithCode(0),
              "disabled: cannot preallocate 4194304 bytes .*; serving continues without G3");
}

TEST_F(DiskTierFaultsTest, FileSystemRefusingDirectIoFallsBackToBufferedIo) {
  EXPECT_EXIT(std::exit(directIoRefused(dir_)), ::testing::ExitedWithCode(0),
              "O_DIRECT refused on .*, using buffered I/O");
}

TEST_F(DiskTierFaultsTest, ForbiddenIoUringFallsBackToTheThreadPool) {
  EXPECT_EXIT(std::exit(uringForbidden(dir_)), ::testing::ExitedWithCode(0),
              "io_uring unavailable \\(Operation not permitted\\), using threads");
}

TEST_F(DiskTierFaultsTest, DirectoryThatCannotBeMadeGivesADisabledTier) {
  const std::string file = dir_ + "/a-file";
  ASSERT_TRUE(writeFile(file, "x"));
  auto tier = DiskTier::open(testOptions(file + "/g3", DiskIoMode::kUring, 4));
  ASSERT_TRUE(tier.ok()) << tier.status();
  EXPECT_TRUE((*tier)->disabled());
  EXPECT_NE((*tier)->disabledReason().find("cannot create"), std::string::npos)
      << (*tier)->disabledReason();
  EXPECT_FALSE((*tier)->store(1, 0, blockData(1), [](absl::Status) { FAIL(); }));
  std::vector<std::byte> back(kTestBlockBytes);
  EXPECT_TRUE(absl::IsUnavailable(loadSync(**tier, 1, back)));
  EXPECT_EQ((*tier)->ioModeName(), "none");
}

// io_uring must really run where the tests run: when it does, the tier uses
// it; when the kernel or a sandbox forbids it, this says so loudly and checks
// the fallback happened (the "uring" cases above then ran on the thread pool).
TEST_F(DiskTierFaultsTest, IoUringRunsHereOrTheFallbackIsReportedLoudly) {
  std::string sysctl = "absent";
  std::ifstream("/proc/sys/kernel/io_uring_disabled") >> sysctl;
  io_uring ring;
  const int rc = io_uring_queue_init(4, &ring, 0);
  if (rc == 0) io_uring_queue_exit(&ring);
  auto tier = DiskTier::open(testOptions(dir_, DiskIoMode::kUring, 4));
  ASSERT_TRUE(tier.ok());
  ASSERT_FALSE((*tier)->disabled()) << (*tier)->disabledReason();
  if (rc == 0) {
    EXPECT_TRUE((*tier)->stats().uring.load());
    EXPECT_TRUE((*tier)->ioModeName().starts_with("uring+")) << (*tier)->ioModeName();
    RecordProperty("io_uring", "available");
  } else {
    std::cerr << "\n*** io_uring is NOT available on this machine: io_uring_setup failed with "
              << std::strerror(-rc) << " (kernel.io_uring_disabled = " << sysctl
              << "). The G3 'uring' test cases ran on the pread/pwrite thread pool. ***\n\n";
    EXPECT_TRUE((*tier)->stats().uring_fallback.load());
    EXPECT_TRUE((*tier)->ioModeName().starts_with("threads+")) << (*tier)->ioModeName();
    RecordProperty("io_uring", std::strerror(-rc));
  }
  roundTripOrExit(**tier);
}

}  // namespace
}  // namespace tandem::kvcache
