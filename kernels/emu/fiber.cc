#include "kernels/emu/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#if defined(__SANITIZE_ADDRESS__)
#define TANDEM_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TANDEM_EMU_ASAN 1
#endif
#endif

#ifdef TANDEM_EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace tandem::emu {

#if defined(__x86_64__)
// switches stacks: saves the callee-saved registers on the current stack,
// stores the stack pointer in *save_sp and continues on new_sp.
extern "C" void tandemEmuSwitch(void** save_sp, void* new_sp);
extern "C" void tandemEmuTrampoline();
asm(R"(
  .text
  .globl tandemEmuSwitch
  .type tandemEmuSwitch,@function
tandemEmuSwitch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size tandemEmuSwitch,.-tandemEmuSwitch
  .globl tandemEmuTrampoline
  .type tandemEmuTrampoline,@function
tandemEmuTrampoline:
  movq %r12, %rdi
  call *%r13
  ud2
  .size tandemEmuTrampoline,.-tandemEmuTrampoline
  .section .note.GNU-stack,"",@progbits
  .text
)");
#endif

struct Fiber::Impl {
  char* mapping = nullptr;
  size_t mapping_bytes = 0;
  char* stack_lo = nullptr;
  size_t stack_bytes = 0;
  Entry entry = nullptr;
  void* arg = nullptr;
#if defined(__x86_64__)
  void* fiber_sp = nullptr;
  void* scheduler_sp = nullptr;
#else
  ucontext_t fiber_ctx;
  ucontext_t scheduler_ctx;
#endif
#ifdef TANDEM_EMU_ASAN
  void* scheduler_fake_stack = nullptr;
  const void* scheduler_stack_lo = nullptr;
  size_t scheduler_stack_bytes = 0;
  // the lowest address of the stack a frame still open at a switch away
  // reached: below it every frame returned, so ASan unpoisoned it.
  char* open_frames_lo = nullptr;
#endif
};

namespace {

#ifdef TANDEM_EMU_ASAN
// called first thing on the fiber after each switch onto it.
void asanArrivedOnFiber(Fiber::Impl* f) {
  __sanitizer_finish_switch_fiber(nullptr, &f->scheduler_stack_lo, &f->scheduler_stack_bytes);
}

// called on the fiber before each switch away: the frames open now (this
// one's and its callers', up to the top) may keep their redzones poisoned if
// the run is abandoned, so the next start() unpoisons down to here. 256
// bytes below for the switch's own pushes.
__attribute__((noinline)) void asanLeavingFiber(Fiber::Impl* f) {
  char* here = static_cast<char*>(__builtin_frame_address(0)) - 256;
  here = std::max(here, f->stack_lo);
  if (f->open_frames_lo == nullptr || here < f->open_frames_lo) f->open_frames_lo = here;
}
#endif

void fiberMain(void* p) {
  Fiber::Impl* f = static_cast<Fiber::Impl*>(p);
#ifdef TANDEM_EMU_ASAN
  asanArrivedOnFiber(f);
#endif
  f->entry(f->arg);
  std::fprintf(stderr, "emu: fiber entry returned\n");
  std::abort();
}

#if !defined(__x86_64__)
void ucontextMain(unsigned hi, unsigned lo) {
  fiberMain(reinterpret_cast<void*>((static_cast<uintptr_t>(hi) << 32) | lo));
}
#endif

}  // namespace

Fiber::Fiber(size_t stack_bytes) : impl_(std::make_unique<Impl>()) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  stack_bytes = (stack_bytes + page - 1) / page * page;
  impl_->mapping_bytes = stack_bytes + page;
  void* m = mmap(nullptr, impl_->mapping_bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) {
    std::fprintf(stderr, "emu: cannot map a fiber stack of %zu bytes\n", stack_bytes);
    std::abort();
  }
  impl_->mapping = static_cast<char*>(m);
  mprotect(impl_->mapping, page, PROT_NONE);  // guard page: overflow faults
  impl_->stack_lo = impl_->mapping + page;
  impl_->stack_bytes = stack_bytes;
}

Fiber::~Fiber() { munmap(impl_->mapping, impl_->mapping_bytes); }

void Fiber::start(Entry entry, void* arg) {
  Impl* f = impl_.get();
  f->entry = entry;
  f->arg = arg;
#ifdef TANDEM_EMU_ASAN
  // frames of an earlier run of this stack ended without unwinding: only
  // those open at a switch away, never below the lowest of them. Unpoisoning
  // the whole 512 KiB stack at every start was most of the ASan pass's
  // emulator time (bench/RESULTS.md "CI time: fresh clones, warm and cold").
  if (f->open_frames_lo != nullptr) {
    char* top = f->stack_lo + f->stack_bytes;
    ASAN_UNPOISON_MEMORY_REGION(f->open_frames_lo, static_cast<size_t>(top - f->open_frames_lo));
    f->open_frames_lo = nullptr;
  }
#endif
#if defined(__x86_64__)
  // the frame tandemEmuSwitch pops: r15 r14 r13 r12 rbx rbp, then the return
  // address; after the ret the stack pointer is 16-byte aligned for the call.
  uintptr_t top = reinterpret_cast<uintptr_t>(f->stack_lo + f->stack_bytes) & ~uintptr_t{15};
  void** sp = reinterpret_cast<void**>(top - 72);
  sp[0] = nullptr;                                        // r15
  sp[1] = nullptr;                                        // r14
  sp[2] = reinterpret_cast<void*>(&fiberMain);            // r13: called
  sp[3] = f;                                              // r12: its argument
  sp[4] = nullptr;                                        // rbx
  sp[5] = nullptr;                                        // rbp
  sp[6] = reinterpret_cast<void*>(&tandemEmuTrampoline);  // return address
  f->fiber_sp = sp;
#else
  getcontext(&f->fiber_ctx);
  f->fiber_ctx.uc_stack.ss_sp = f->stack_lo;
  f->fiber_ctx.uc_stack.ss_size = f->stack_bytes;
  f->fiber_ctx.uc_link = nullptr;
  const uintptr_t p = reinterpret_cast<uintptr_t>(f);
  makecontext(&f->fiber_ctx, reinterpret_cast<void (*)()>(&ucontextMain), 2,
              static_cast<unsigned>(p >> 32), static_cast<unsigned>(p & 0xffffffffu));
#endif
}

void Fiber::resume() {
  Impl* f = impl_.get();
#ifdef TANDEM_EMU_ASAN
  __sanitizer_start_switch_fiber(&f->scheduler_fake_stack, f->stack_lo, f->stack_bytes);
#endif
#if defined(__x86_64__)
  tandemEmuSwitch(&f->scheduler_sp, f->fiber_sp);
#else
  swapcontext(&f->scheduler_ctx, &f->fiber_ctx);
#endif
#ifdef TANDEM_EMU_ASAN
  __sanitizer_finish_switch_fiber(f->scheduler_fake_stack, nullptr, nullptr);
#endif
}

void Fiber::yieldToScheduler() {
  Impl* f = impl_.get();
#ifdef TANDEM_EMU_ASAN
  asanLeavingFiber(f);
  void* fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&fake_stack, f->scheduler_stack_lo, f->scheduler_stack_bytes);
#endif
#if defined(__x86_64__)
  tandemEmuSwitch(&f->fiber_sp, f->scheduler_sp);
#else
  swapcontext(&f->fiber_ctx, &f->scheduler_ctx);
#endif
#ifdef TANDEM_EMU_ASAN
  __sanitizer_finish_switch_fiber(fake_stack, &f->scheduler_stack_lo, &f->scheduler_stack_bytes);
#endif
}

void Fiber::finishToScheduler() {
  Impl* f = impl_.get();
#ifdef TANDEM_EMU_ASAN
  asanLeavingFiber(f);
  // nullptr: this stack is abandoned, ASan may drop its fake frames
  __sanitizer_start_switch_fiber(nullptr, f->scheduler_stack_lo, f->scheduler_stack_bytes);
#endif
#if defined(__x86_64__)
  tandemEmuSwitch(&f->fiber_sp, f->scheduler_sp);
#else
  swapcontext(&f->fiber_ctx, &f->scheduler_ctx);
#endif
  std::abort();  // a finished fiber is never resumed
}

}  // namespace tandem::emu
