// Runs the threads of one emulated thread block as fibers on the calling OS
// thread, with GPU semantics:
//  - __syncthreads(): a thread waits until every thread of the block is at
//    the same barrier; threads at different barriers, or a thread that has
//    exited while others wait, is barrier divergence: the block fails.
//  - warp collectives (shuffles, ballots): lockstep. Lanes meet at the op,
//    values are exchanged once every live lane of the warp has arrived;
//    lanes at different collectives, or a shuffle that reads an exited or
//    missing lane, fail the block.
//  - shared memory: one arena per block, filled with 0xff (a NaN for floats)
//    so reading a value nobody wrote shows; views are bounds-checked.
// Threads run in order until they block, so a missing barrier lets a thread
// read shared memory its neighbours have not written yet: the emulator is
// deliberately hostile to races. A failure never hangs: the block stops and
// run() returns the message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/emu/device_types.h"
#include "kernels/emu/fiber.h"

namespace tandem::emu {

enum class WarpOp : uint8_t { kShfl, kShflXor, kShflUp, kShflDown, kBallot, kAny, kAll, kSnapshot };

// what the device code of one emulated thread sees.
struct ThreadContext {
  uint3 thread_idx;
  uint3 block_idx;
  dim3 block_dim;
  dim3 grid_dim;
  int linear = 0;  // x + y * bx + z * bx * by
  int lane = 0;
  int warp = 0;
  int warp_size = 64;
};

struct LaunchShape {
  const char* kernel = "";
  dim3 grid;
  dim3 block;
  int warp_size = 64;
};

class BlockRunner {
 public:
  static constexpr size_t kSharedBytes = 64 * 1024;  // LDS per workgroup on CDNA
  static constexpr int kMaxThreads = 1024;

  BlockRunner();
  ~BlockRunner();

  // runs body() on every thread of block `block_idx`; "" when every thread
  // finished, else what went wrong (with kernel, block and thread).
  std::string run(const LaunchShape& shape, uint3 block_idx, const std::function<void()>& body);

  // --- called from device code running on a fiber of this runner ---
  static BlockRunner& active();
  ThreadContext& thread();
  void barrier(const char* file, int line);
  // exchanges `value` among the lanes of this thread's warp; see WarpOp.
  uint64_t warpCollective(WarpOp op, uint64_t value, int arg, int width, const char* file,
                          int line);
  // a collective that hands every lane a copy of every lane's `bytes` bytes at
  // `mine` ([warp size][bytes]; valid until the warp's next collective).
  // Needs the whole wave live: matrix instructions are emulated with it.
  const unsigned char* warpSnapshot(const void* mine, int bytes, const char* file, int line);
  // the block's instance of the __shared__ variable `tag`.
  void* shared(const void* tag, const char* name, size_t bytes, size_t align);
  // fails the block with `message`; unwinds the calling thread's frames (an
  // exception caught at the base of its fiber) and never returns.
  [[noreturn]] void fail(const std::string& message);

 private:
  struct Thread;
  struct SharedVar {
    const void* tag;
    size_t offset;
    size_t bytes;
  };

  static void threadMain(void* arg);
  std::string where(const Thread& t) const;
  bool resolveWarps();
  // completes the collective op every waiting lane of warp `warp`
  // (threads [first, last)) is at, or sets failure_.
  void resolveWarp(int warp, int first, int last);
  // the first waiting lane, when all waiting lanes are at the same op;
  // null when they diverge (failure_ set) or none waits.
  const Thread* warpLead(int first, int last);
  // a matrix op: every lane's bytes gathered into the warp's snapshot.
  void resolveSnapshot(int warp, int first, int last, const Thread& lead);
  // shuffles and votes: each waiting lane reads its source lane or the votes.
  void resolveLaneOps(int warp, int first, int last);
  std::string checkBlocked();

  LaunchShape shape_;
  uint3 block_idx_;
  const std::function<void()>* body_ = nullptr;
  std::vector<std::unique_ptr<Thread>> threads_;
  int num_threads_ = 0;
  std::vector<unsigned char> shared_arena_;
  std::vector<std::vector<unsigned char>> snapshots_;  // per warp
  std::vector<SharedVar> shared_vars_;
  size_t shared_used_ = 0;
  std::string failure_;
  Thread* running_ = nullptr;
};

}  // namespace tandem::emu
