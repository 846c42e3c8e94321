// The crash report: the table of held request ids, and a real fatal signal
// (a SIGSEGV, an abort(), a stack overflow on a thread with its alternate
// stack) in a child process that prints the ids it held and dies of it.
#include "common/crash_report.h"

#include <signal.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace tandem::crash {
namespace {

// what writeTo() writes, read back through a pipe.
std::string written(const InFlightIds& ids) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  ids.writeTo(fds[1]);
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, n);
  ::close(fds[0]);
  return out;
}

TEST(InFlightIdsTest, HoldsIdsUntilTheirHoldGoes) {
  InFlightIds& ids = InFlightIds::global();
  const size_t before = ids.size();
  {
    InFlightIds::Hold a = ids.hold("req-a");
    InFlightIds::Hold b = ids.hold(std::string(200, 'x'));  // cut to kMaxIdBytes
    EXPECT_EQ(ids.size(), before + 2);
    const std::string out = written(ids);
    EXPECT_NE(out.find(" req-a"), std::string::npos) << out;
    EXPECT_NE(out.find(" " + std::string(InFlightIds::kMaxIdBytes, 'x')), std::string::npos);
    EXPECT_EQ(out.find(std::string(InFlightIds::kMaxIdBytes + 1, 'x')), std::string::npos);
    InFlightIds::Hold moved = std::move(a);
    a.release();  // moved from: nothing
    EXPECT_EQ(ids.size(), before + 2);
  }
  EXPECT_EQ(ids.size(), before);
}

TEST(InFlightIdsTest, AFullTableCountsWhatItCannotRemember) {
  InFlightIds& ids = InFlightIds::global();
  std::vector<InFlightIds::Hold> holds;
  for (size_t i = 0; i < InFlightIds::kSlots + 2; ++i) holds.push_back(ids.hold("r" + std::to_string(i)));
  EXPECT_NE(written(ids).find(" (+2 not remembered)"), std::string::npos);
  holds.clear();
  EXPECT_EQ(written(ids), " none");
}

// in a child: holds `id`, then dies of `crash`.
void holdAndCrash(const char* id, void (*crash)()) {
  installCrashReport("tandem test");
  InFlightIds::Hold hold = InFlightIds::global().hold(id);
  crash();
}

void segfault() { ::raise(SIGSEGV); }
// a real fault: the report, then the fault again for the default action.
void nullWrite() {
  volatile int* volatile nowhere = nullptr;
  *nowhere = 1;
}
void abortNow() { std::abort(); }

// recurses until the stack is gone (the frame's bytes are used, so the
// compiler cannot turn it into a loop).
int overflow(int depth) {
  if (depth > (1 << 30)) return 0;  // never: the stack ends long before
  volatile char frame[1024];
  frame[0] = static_cast<char>(depth);
  return overflow(depth + 1) + frame[0];
}
void overflowOnAThread() {
  std::thread([] {
    useAltStackOnThisThread();
    overflow(0);
  }).join();
}

TEST(CrashReportDeathTest, ASegfaultNamesTheHeldRequestsAndDiesOfIt) {
  EXPECT_EXIT(holdAndCrash("req-segv-1", segfault), ::testing::KilledBySignal(SIGSEGV),
              "tandem test: fatal signal 11 \\(SIGSEGV\\) holding requests: .*req-segv-1");
}

TEST(CrashReportDeathTest, AFaultingWriteNamesTheHeldRequestsAndDiesOfIt) {
  EXPECT_EXIT(holdAndCrash("req-null-4", nullWrite), ::testing::KilledBySignal(SIGSEGV),
              "tandem test: fatal signal 11 \\(SIGSEGV\\) holding requests: .*req-null-4");
}

TEST(CrashReportDeathTest, AnAbortNamesTheHeldRequestsAndDiesOfIt) {
  EXPECT_EXIT(holdAndCrash("req-abrt-2", abortNow), ::testing::KilledBySignal(SIGABRT),
              "tandem test: fatal signal 6 \\(SIGABRT\\) holding requests: .*req-abrt-2");
}

TEST(CrashReportDeathTest, AStackOverflowIsReportedFromTheAlternateStack) {
  EXPECT_EXIT(holdAndCrash("req-deep-3", overflowOnAThread), ::testing::KilledBySignal(SIGSEGV),
              "fatal signal 11 \\(SIGSEGV\\) holding requests: .*req-deep-3");
}

}  // namespace
}  // namespace tandem::crash
