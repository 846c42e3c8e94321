// Fibers for the host emulator: one per emulated GPU thread. A fiber runs
// on its own stack until it calls yieldToScheduler(); the scheduler resumes
// it with resume(). The switch is a few instructions on x86-64 (hand-rolled:
// callee-saved registers and the stack pointer) and ucontext elsewhere; under
// AddressSanitizer every switch is announced to ASan so it follows the stack.
#pragma once

#include <cstddef>
#include <memory>

namespace tandem::emu {

class Fiber {
 public:
  using Entry = void (*)(void* arg);

  // a fiber with a stack of `stack_bytes` (plus a guard page below it, so an
  // overflow faults instead of corrupting a neighbour).
  explicit Fiber(size_t stack_bytes);
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // prepares the fiber to run entry(arg) from the top of its stack on the
  // next resume(). The entry must never return: it ends with
  // finishToScheduler().
  void start(Entry entry, void* arg);
  // runs the fiber until it yields or finishes; called by the scheduler only.
  void resume();
  // called on the fiber: back to the scheduler; resume() continues here.
  void yieldToScheduler();
  // called on the fiber when it is done: back to the scheduler for good.
  [[noreturn]] void finishToScheduler();

  struct Impl;  // the stack and saved contexts (fiber.cc)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tandem::emu
