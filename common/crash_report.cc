#include "common/crash_report.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

namespace tandem::crash {
namespace {

const char* g_process = "tandem";
// what each fatal signal did before: restored once the report is out, so a
// sanitizer's or the default action still follows.
constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
struct sigaction g_previous[NSIG];

void writeAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w <= 0) return;
    data += w;
    n -= static_cast<size_t>(w);
  }
}

void writeStr(int fd, const char* s) { writeAll(fd, s, ::strlen(s)); }

// decimal without stdio.
void writeNumber(int fd, size_t v) {
  char buf[24];
  size_t i = sizeof(buf);
  do {
    buf[--i] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v > 0 && i > 0);
  writeAll(fd, buf + i, sizeof(buf) - i);
}

const char* signalName(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    default: return "?";
  }
}

void onFatalSignal(int sig, siginfo_t* info, void*) {
  writeStr(STDERR_FILENO, g_process);
  writeStr(STDERR_FILENO, ": fatal signal ");
  writeNumber(STDERR_FILENO, static_cast<size_t>(sig));
  writeStr(STDERR_FILENO, " (");
  writeStr(STDERR_FILENO, signalName(sig));
  writeStr(STDERR_FILENO, ") holding requests:");
  InFlightIds::global().writeTo(STDERR_FILENO);
  writeStr(STDERR_FILENO, "\n");
  // what was there before (the default: die of the signal, as the process
  // would have without this handler; a sanitizer's report) takes it now. A
  // fault the CPU raised comes back when its instruction runs again, with
  // its own details; a signal sent (kill, abort()) is sent again.
  ::sigaction(sig, &g_previous[sig], nullptr);
  if (info != nullptr && info->si_code > 0) return;
  ::raise(sig);
}

}  // namespace

InFlightIds& InFlightIds::global() {
  static InFlightIds* table = new InFlightIds();  // never destroyed: a crash may come at exit
  return *table;
}

InFlightIds::Hold& InFlightIds::Hold::operator=(Hold&& other) noexcept {
  if (this != &other) {
    release();
    owner_ = other.owner_;
    slot_ = other.slot_;
    other.owner_ = nullptr;
  }
  return *this;
}

void InFlightIds::Hold::release() {
  if (owner_ == nullptr) return;
  if (slot_ == kSlots) {
    owner_->overflow_.fetch_sub(1, std::memory_order_relaxed);
  } else {
    owner_->slots_[slot_].state.store(0, std::memory_order_release);
  }
  owner_ = nullptr;
}

InFlightIds::Hold InFlightIds::hold(std::string_view id) {
  for (size_t i = 0; i < kSlots; ++i) {
    int free = 0;
    Slot& slot = slots_[i];
    if (!slot.state.compare_exchange_strong(free, 1, std::memory_order_acquire)) continue;
    slot.length = std::min(id.size(), kMaxIdBytes);
    ::memcpy(slot.bytes, id.data(), slot.length);
    slot.state.store(2, std::memory_order_release);
    return Hold(this, i);
  }
  overflow_.fetch_add(1, std::memory_order_relaxed);
  return Hold(this, kSlots);
}

void InFlightIds::writeTo(int fd) const {
  size_t written = 0;
  for (const Slot& slot : slots_) {
    if (slot.state.load(std::memory_order_acquire) != 2) continue;
    writeAll(fd, " ", 1);
    writeAll(fd, slot.bytes, std::min(slot.length, kMaxIdBytes));
    ++written;
  }
  if (written == 0) writeStr(fd, " none");
  if (const size_t more = overflow_.load(std::memory_order_relaxed); more > 0) {
    writeStr(fd, " (+");
    writeNumber(fd, more);
    writeStr(fd, " not remembered)");
  }
}

size_t InFlightIds::size() const {
  size_t n = 0;
  for (const Slot& slot : slots_) n += slot.state.load(std::memory_order_acquire) == 2 ? 1 : 0;
  return n;
}

namespace {

// this thread's alternate signal stack; at thread exit the one it replaced
// is put back before the memory goes, so nothing is left pointing at freed
// memory (and a sanitizer that unmaps the thread's alternate stack at exit
// unmaps its own: ASan aborted every thread exit otherwise).
struct AltStack {
  std::unique_ptr<char[]> memory;
  stack_t previous{};
  ~AltStack() {
    if (memory != nullptr) ::sigaltstack(&previous, nullptr);
  }
};

}  // namespace

void useAltStackOnThisThread() {
  // a stack overflow is a SIGSEGV with no stack left to handle it on.
  constexpr size_t kBytes = 64 * 1024;
  thread_local AltStack alt;
  if (alt.memory != nullptr) return;
  auto memory = std::make_unique<char[]>(kBytes);
  stack_t ss{};
  ss.ss_sp = memory.get();
  ss.ss_size = kBytes;
  if (::sigaltstack(&ss, &alt.previous) == 0) alt.memory = std::move(memory);
}

void installCrashReport(const char* process) {
  g_process = process;
  useAltStackOnThisThread();
  struct sigaction sa {};
  sa.sa_sigaction = onFatalSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  for (int sig : kFatalSignals) ::sigaction(sig, &sa, &g_previous[sig]);
}

}  // namespace tandem::crash
