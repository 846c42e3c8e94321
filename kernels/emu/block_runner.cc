#include "kernels/emu/block_runner.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace tandem::emu {

namespace {

// fiber stacks: kernels keep small register arrays; ASan frames are larger.
#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kStackBytes = 512 * 1024;
#else
constexpr size_t kStackBytes = 128 * 1024;
#endif

thread_local BlockRunner* t_active = nullptr;

std::string site(const char* file, int line) {
  const char* slash = std::strrchr(file, '/');
  return std::string(slash != nullptr ? slash + 1 : file) + ":" + std::to_string(line);
}

std::string triple(const uint3& v) {
  return "(" + std::to_string(v.x) + "," + std::to_string(v.y) + "," + std::to_string(v.z) + ")";
}

}  // namespace

struct BlockRunner::Thread {
  enum class State : uint8_t { kRunnable, kBarrier, kWarp, kExited };

  Thread() : fiber(kStackBytes) {}
  Fiber fiber;
  ThreadContext ctx;
  State state = State::kRunnable;
  const char* file = "";
  int line = 0;
  WarpOp op = WarpOp::kShfl;
  uint64_t value = 0;
  int arg = 0;
  int width = 0;
  uint64_t result = 0;
};

BlockRunner::BlockRunner() : shared_arena_(kSharedBytes) {}
BlockRunner::~BlockRunner() = default;

BlockRunner& BlockRunner::active() {
  if (t_active == nullptr) {
    std::fprintf(stderr, "emu: device code called outside a kernel launch\n");
    std::abort();
  }
  return *t_active;
}

ThreadContext& BlockRunner::thread() { return running_->ctx; }

namespace {
// thrown by fail() on the failing fiber and caught at its base, so the
// fiber's frames unwind (their temporaries, e.g. the message, are freed).
struct KernelAbort {};
}  // namespace

void BlockRunner::threadMain(void* arg) {
  BlockRunner* self = static_cast<BlockRunner*>(arg);
  try {
    (*self->body_)();
  } catch (const KernelAbort&) {
  }
  self->running_->state = Thread::State::kExited;
  self->running_->fiber.finishToScheduler();
}

std::string BlockRunner::where(const Thread& t) const {
  return "thread " + triple(t.ctx.thread_idx) + " (warp " + std::to_string(t.ctx.warp) + ", lane " +
         std::to_string(t.ctx.lane) + ")";
}

std::string BlockRunner::run(const LaunchShape& shape, uint3 block_idx,
                             const std::function<void()>& body) {
  shape_ = shape;
  block_idx_ = block_idx;
  body_ = &body;
  failure_.clear();
  shared_vars_.clear();
  shared_used_ = 0;
  num_threads_ = static_cast<int>(shape.block.x * shape.block.y * shape.block.z);
  while (static_cast<int>(threads_.size()) < num_threads_) {
    threads_.push_back(std::make_unique<Thread>());
  }
  for (int i = 0; i < num_threads_; ++i) {
    Thread& t = *threads_[i];
    t.state = Thread::State::kRunnable;
    t.ctx.block_dim = shape.block;
    t.ctx.grid_dim = shape.grid;
    t.ctx.block_idx = block_idx;
    t.ctx.thread_idx = uint3{i % shape.block.x, (i / shape.block.x) % shape.block.y,
                             i / (shape.block.x * shape.block.y)};
    t.ctx.linear = i;
    t.ctx.warp_size = shape.warp_size;
    t.ctx.lane = i % shape.warp_size;
    t.ctx.warp = i / shape.warp_size;
    t.fiber.start(&BlockRunner::threadMain, this);
  }
  BlockRunner* outer = t_active;
  t_active = this;
  for (;;) {
    bool ran = false;
    for (int i = 0; i < num_threads_ && failure_.empty(); ++i) {
      Thread& t = *threads_[i];
      if (t.state != Thread::State::kRunnable) continue;
      running_ = &t;
      t.fiber.resume();
      ran = true;
    }
    running_ = nullptr;
    if (!failure_.empty()) break;
    if (ran) continue;
    if (resolveWarps()) continue;
    if (!failure_.empty()) break;
    const std::string blocked = checkBlocked();
    if (blocked == "done") break;
    if (!blocked.empty()) {
      failure_ = blocked;
      break;
    }
  }
  t_active = outer;
  if (failure_.empty()) return "";
  return std::string("kernel ") + shape.kernel + ", block " + triple(block_idx) + ": " + failure_;
}

// releases the warps whose live lanes all wait at one collective.
bool BlockRunner::resolveWarps() {
  bool released = false;
  const int ws = shape_.warp_size;
  for (int first = 0; first < num_threads_ && failure_.empty(); first += ws) {
    const int last = std::min(num_threads_, first + ws);
    bool any_waiting = false, all_waiting = true;
    for (int i = first; i < last; ++i) {
      const Thread::State s = threads_[i]->state;
      if (s == Thread::State::kWarp) any_waiting = true;
      if (s != Thread::State::kWarp && s != Thread::State::kExited) all_waiting = false;
    }
    if (!any_waiting || !all_waiting) continue;
    resolveWarp(first / ws, first, last);
    released = true;
  }
  return released;
}

void BlockRunner::resolveWarp(int warp, int first, int last) {
  const Thread* lead = warpLead(first, last);
  if (lead == nullptr) return;
  if (lead->op == WarpOp::kSnapshot) {
    resolveSnapshot(warp, first, last, *lead);
  } else {
    resolveLaneOps(warp, first, last);
  }
}

const BlockRunner::Thread* BlockRunner::warpLead(int first, int last) {
  const Thread* lead = nullptr;
  for (int i = first; i < last; ++i) {
    const Thread& t = *threads_[i];
    if (t.state != Thread::State::kWarp) continue;
    if (lead == nullptr) {
      lead = &t;
    } else if (t.file != lead->file || t.line != lead->line || t.op != lead->op) {
      failure_ = "warp divergence: " + where(*lead) + " is at the collective at " +
                 site(lead->file, lead->line) + " but " + where(t) + " at " + site(t.file, t.line);
      return nullptr;
    }
  }
  return lead;
}

void BlockRunner::resolveSnapshot(int warp, int first, int last, const Thread& lead) {
  const int ws = shape_.warp_size;
  const int bytes = lead.arg;
  if (last - first != ws) {
    failure_ = "matrix op at " + site(lead.file, lead.line) + " in a partial wave of " +
               std::to_string(last - first) + " lanes";
    return;
  }
  if (static_cast<int>(snapshots_.size()) <= warp) snapshots_.resize(warp + 1);
  std::vector<unsigned char>& snap = snapshots_[warp];
  snap.assign(static_cast<size_t>(ws) * bytes, 0);
  for (int i = first; i < last; ++i) {
    Thread& t = *threads_[i];
    if (t.state != Thread::State::kWarp) {
      failure_ = "matrix op at " + site(lead.file, lead.line) + ": " + where(t) +
                 " is inactive (the whole wave must take part)";
      return;
    }
    std::memcpy(snap.data() + static_cast<size_t>(i - first) * bytes,
                reinterpret_cast<const void*>(t.value), bytes);
    t.result = reinterpret_cast<uint64_t>(snap.data());
    t.state = Thread::State::kRunnable;
  }
}

void BlockRunner::resolveLaneOps(int warp, int first, int last) {
  const int ws = shape_.warp_size;
  uint64_t votes = 0;
  int live = 0;
  for (int i = first; i < last; ++i) {
    const Thread& t = *threads_[i];
    if (t.state != Thread::State::kWarp) continue;
    ++live;
    if (t.value != 0) votes |= uint64_t{1} << (i - first);
  }
  for (int i = first; i < last; ++i) {
    Thread& t = *threads_[i];
    if (t.state != Thread::State::kWarp) continue;
    const int self = i - first;
    const int width = t.width;
    int src = self;
    switch (t.op) {
      case WarpOp::kShfl:
        src = (t.arg & (width - 1)) + (self & ~(width - 1));
        break;
      case WarpOp::kShflXor: {
        const int x = self ^ t.arg;
        src = x >= ((self + width) & ~(width - 1)) ? self : x;
        break;
      }
      case WarpOp::kShflDown:
        src = (self & (width - 1)) + t.arg >= width ? self : self + t.arg;
        break;
      case WarpOp::kShflUp:
        src = self - t.arg < (self & ~(width - 1)) ? self : self - t.arg;
        break;
      case WarpOp::kBallot:
        t.result = votes;
        continue;
      case WarpOp::kAny:
        t.result = votes != 0;
        continue;
      case WarpOp::kAll:
        t.result = __builtin_popcountll(votes) == live;
        continue;
      case WarpOp::kSnapshot:
        continue;  // handled above
    }
    if (src < 0 || src >= ws || first + src >= last ||
        threads_[first + src]->state != Thread::State::kWarp) {
      failure_ = "shuffle at " + site(t.file, t.line) + ": " + where(t) + " reads lane " +
                 std::to_string(src) + " of warp " + std::to_string(warp) +
                 ", which is inactive (exited or beyond the block)";
      return;
    }
    t.result = threads_[first + src]->value;
  }
  for (int i = first; i < last; ++i) {
    if (threads_[i]->state == Thread::State::kWarp) threads_[i]->state = Thread::State::kRunnable;
  }
}

// every live thread is blocked and no warp can proceed: a legal barrier, or a
// deadlock that a GPU would hang on (reported instead). "done" when all exited.
std::string BlockRunner::checkBlocked() {
  const Thread* at_barrier = nullptr;
  const Thread* exited = nullptr;
  const Thread* at_warp = nullptr;
  for (int i = 0; i < num_threads_; ++i) {
    const Thread& t = *threads_[i];
    switch (t.state) {
      case Thread::State::kBarrier:
        if (at_barrier == nullptr) {
          at_barrier = &t;
        } else if (t.file != at_barrier->file || t.line != at_barrier->line) {
          return "barrier divergence: " + where(*at_barrier) + " waits at __syncthreads() at " +
                 site(at_barrier->file, at_barrier->line) + " but " + where(t) + " at " +
                 site(t.file, t.line);
        }
        break;
      case Thread::State::kExited:
        if (exited == nullptr) exited = &t;
        break;
      case Thread::State::kWarp:
        if (at_warp == nullptr) at_warp = &t;
        break;
      case Thread::State::kRunnable:
        return "emu: runnable thread left behind";
    }
  }
  if (at_barrier == nullptr && at_warp == nullptr) return "done";
  if (at_warp != nullptr) {
    return "deadlock: " + where(*at_warp) + " waits at the warp collective at " +
           site(at_warp->file, at_warp->line) + " for lanes that are at a barrier" +
           (at_barrier != nullptr ? " (" + site(at_barrier->file, at_barrier->line) + ")" : "");
  }
  if (exited != nullptr) {
    return "barrier divergence: " + where(*at_barrier) + " waits at __syncthreads() at " +
           site(at_barrier->file, at_barrier->line) + " but " + where(*exited) +
           " has already exited";
  }
  for (int i = 0; i < num_threads_; ++i) threads_[i]->state = Thread::State::kRunnable;
  return "";
}

void BlockRunner::barrier(const char* file, int line) {
  Thread& t = *running_;
  t.state = Thread::State::kBarrier;
  t.file = file;
  t.line = line;
  t.fiber.yieldToScheduler();
}

uint64_t BlockRunner::warpCollective(WarpOp op, uint64_t value, int arg, int width,
                                     const char* file, int line) {
  Thread& t = *running_;
  if (width <= 0 || width > shape_.warp_size || (width & (width - 1)) != 0) {
    fail("warp collective at " + site(file, line) + " with width " + std::to_string(width) +
         " (warp size " + std::to_string(shape_.warp_size) + ")");
  }
  t.state = Thread::State::kWarp;
  t.op = op;
  t.value = value;
  t.arg = arg;
  t.width = width;
  t.file = file;
  t.line = line;
  t.fiber.yieldToScheduler();
  return t.result;
}

const unsigned char* BlockRunner::warpSnapshot(const void* mine, int bytes, const char* file,
                                               int line) {
  const uint64_t p = warpCollective(WarpOp::kSnapshot, reinterpret_cast<uint64_t>(mine), bytes,
                                    shape_.warp_size, file, line);
  return reinterpret_cast<const unsigned char*>(p);
}

void* BlockRunner::shared(const void* tag, const char* name, size_t bytes, size_t align) {
  for (const SharedVar& v : shared_vars_) {
    if (v.tag == tag) return shared_arena_.data() + v.offset;
  }
  const size_t offset = (shared_used_ + align - 1) / align * align;
  if (offset + bytes > kSharedBytes) {
    fail(std::string("shared memory exhausted: ") + name + " needs " + std::to_string(bytes) +
         " bytes at offset " + std::to_string(offset) + ", the block has " +
         std::to_string(kSharedBytes));
  }
  std::memset(shared_arena_.data() + offset, 0xff, bytes);  // unwritten reads show as NaN
  shared_vars_.push_back({tag, offset, bytes});
  shared_used_ = offset + bytes;
  return shared_arena_.data() + offset;
}

void BlockRunner::fail(const std::string& message) {
  const Thread& t = *running_;
  if (failure_.empty()) failure_ = where(t) + ": " + message;
  throw KernelAbort{};
}

}  // namespace tandem::emu
