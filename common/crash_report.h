// What a process says when it crashes: the request ids it held. Request
// paths hold their id in a fixed table (InFlightIds) for as long as they
// work on it; installCrashReport() sets a handler for the fatal signals
// (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) that writes one line to stderr
// — "PROCESS: fatal signal 11 (SIGSEGV) holding requests: ID ID ..." — and
// then hands the signal to the action it replaced (by default the process
// dies of it as it would have, so a supervisor sees the same exit status and
// core dumps still happen; under a sanitizer, its report follows). The handler is async-signal-
// safe: it reads the table without locks and writes with write(2); no
// allocation, no stdio. On a thread that called useAltStackOnThisThread()
// (main, the HTTP I/O threads, the preparing threads) it runs on a stack of
// its own, so a stack overflow there (deep recursion) is reported too.
#pragma once

#include <atomic>
#include <cstddef>
#include <string_view>

namespace tandem::crash {

class InFlightIds {
 public:
  // ids longer than this are cut (they are for finding the request, and
  // clients bound theirs below it).
  static constexpr size_t kMaxIdBytes = 79;
  // requests held at once; more than this are not remembered (counted).
  static constexpr size_t kSlots = 256;

  // the process's table.
  static InFlightIds& global();

  // holds `id` until destroyed (a request in progress). Move-only.
  class Hold {
   public:
    Hold() = default;
    Hold(Hold&& other) noexcept : owner_(other.owner_), slot_(other.slot_) { other.owner_ = nullptr; }
    Hold& operator=(Hold&& other) noexcept;
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    ~Hold() { release(); }
    void release();

   private:
    friend class InFlightIds;
    // slot kSlots: an id the full table could not remember (counted).
    Hold(InFlightIds* owner, size_t slot) : owner_(owner), slot_(slot) {}
    InFlightIds* owner_ = nullptr;
    size_t slot_ = 0;
  };

  // takes a free slot for `id` (nothing held when the table is full).
  Hold hold(std::string_view id);

  // writes the held ids to `fd`, space-separated, then " (+N not
  // remembered)" when some overflowed. Async-signal-safe.
  void writeTo(int fd) const;
  // how many ids are held now (for tests).
  size_t size() const;

 private:
  struct Slot {
    // 0 free, 1 being written, 2 holds an id
    std::atomic<int> state{0};
    size_t length = 0;
    char bytes[kMaxIdBytes] = {};
  };
  Slot slots_[kSlots];
  std::atomic<size_t> overflow_{0};
};

// installs the fatal-signal handler for this process; `process` (e.g.
// "tandem router") starts its line. Call once, early in main (it gives the
// calling thread its alternate stack).
void installCrashReport(const char* process);

// gives the calling thread an alternate signal stack (once; a thread's
// stack of its own is not inherited by the threads it starts).
void useAltStackOnThisThread();

}  // namespace tandem::crash
