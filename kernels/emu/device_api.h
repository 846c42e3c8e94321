// The device side of the HIP language, for kernel sources compiled by the
// host compiler against the emulator (kernels/hip/gpu_vendor.h includes this
// when neither hipcc nor nvcc compiles). Names follow HIP: __syncthreads(),
// __shfl_xor(), __ballot(), atomicAdd(), threadIdx, warpSize... Collectives
// record their call site (__builtin_FILE/LINE) so divergence reports say
// where each thread was.
#pragma once

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "kernels/emu/block_runner.h"
#include "kernels/emu/device_types.h"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)

#define threadIdx (::tandem::emu::BlockRunner::active().thread().thread_idx)
#define blockIdx (::tandem::emu::BlockRunner::active().thread().block_idx)
#define blockDim (::tandem::emu::BlockRunner::active().thread().block_dim)
#define gridDim (::tandem::emu::BlockRunner::active().thread().grid_dim)

namespace tandem::emu {

// a bounds-checked view of a __shared__ array (T may itself be an array).
template <class A>
class SharedView;

template <class T, size_t N>
class SharedView<T[N]> {
 public:
  SharedView(T* data, const char* name) : data_(data), name_(name) {}
  decltype(auto) operator[](int64_t i) const {
    if (i < 0 || static_cast<uint64_t>(i) >= N) {
      BlockRunner::active().fail(std::string("shared memory out of bounds: ") + name_ + "[" +
                                 std::to_string(i) + "] with extent " + std::to_string(N));
    }
    if constexpr (std::is_array_v<T>) {
      return SharedView<T>(data_[i], name_);
    } else {
      return (data_[i]);
    }
  }

 private:
  T* data_;
  const char* name_;
};

template <class A>
SharedView<A> sharedArray(const void* tag, const char* name) {
  using Element = std::remove_all_extents_t<A>;
  static_assert(std::is_trivially_copyable_v<Element>, "__shared__ holds plain data");
  // 32 bytes, as TANDEM_SHARED aligns on a GPU (matrix-core tiles)
  void* p = BlockRunner::active().shared(tag, name, sizeof(A),
                                         alignof(Element) < 32 ? 32 : alignof(Element));
  return SharedView<A>(*static_cast<A*>(p), name);
}

template <class T>
uint64_t toBits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>);
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}

template <class T>
T fromBits(uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}

template <class T>
T shuffle(WarpOp op, T v, int arg, int width, const char* file, int line) {
  return fromBits<T>(BlockRunner::active().warpCollective(op, toBits(v), arg, width, file, line));
}

// warpSize: the running kernel's wave size. An object rather than a macro so
// that hipDeviceProp_t::warpSize stays usable on the host.
struct WarpSizeValue {
  operator int() const { return BlockRunner::active().thread().warp_size; }
};

}  // namespace tandem::emu

inline constexpr ::tandem::emu::WarpSizeValue warpSize{};

// TANDEM_SHARED(float, tile, [32][33]) declares the block's shared array.
#define TANDEM_SHARED(type, name, dims)    \
  static const char name##_shared_tag = 0; \
  const auto name = ::tandem::emu::sharedArray<type dims>(&name##_shared_tag, #name)

inline void __syncthreads(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  ::tandem::emu::BlockRunner::active().barrier(file, line);
}

template <class T>
T __shfl(T v, int src_lane, int width = warpSize, const char* file = __builtin_FILE(),
         int line = __builtin_LINE()) {
  return ::tandem::emu::shuffle(::tandem::emu::WarpOp::kShfl, v, src_lane, width, file, line);
}
template <class T>
T __shfl_xor(T v, int lane_mask, int width = warpSize, const char* file = __builtin_FILE(),
             int line = __builtin_LINE()) {
  return ::tandem::emu::shuffle(::tandem::emu::WarpOp::kShflXor, v, lane_mask, width, file, line);
}
template <class T>
T __shfl_down(T v, unsigned delta, int width = warpSize, const char* file = __builtin_FILE(),
              int line = __builtin_LINE()) {
  return ::tandem::emu::shuffle(::tandem::emu::WarpOp::kShflDown, v, static_cast<int>(delta), width,
                                file, line);
}
template <class T>
T __shfl_up(T v, unsigned delta, int width = warpSize, const char* file = __builtin_FILE(),
            int line = __builtin_LINE()) {
  return ::tandem::emu::shuffle(::tandem::emu::WarpOp::kShflUp, v, static_cast<int>(delta), width,
                                file, line);
}
inline unsigned long long __ballot(int predicate, const char* file = __builtin_FILE(),
                                   int line = __builtin_LINE()) {
  return ::tandem::emu::BlockRunner::active().warpCollective(
      ::tandem::emu::WarpOp::kBallot, predicate != 0, 0, warpSize, file, line);
}
inline int __any(int predicate, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return static_cast<int>(::tandem::emu::BlockRunner::active().warpCollective(
      ::tandem::emu::WarpOp::kAny, predicate != 0, 0, warpSize, file, line));
}
inline int __all(int predicate, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return static_cast<int>(::tandem::emu::BlockRunner::active().warpCollective(
      ::tandem::emu::WarpOp::kAll, predicate != 0, 0, warpSize, file, line));
}
inline int __lane_id() { return ::tandem::emu::BlockRunner::active().thread().lane; }

namespace tandem::emu {

// v_mfma_f32_16x16x4f32 of CDNA, emulated for a wave of 64 (the layout of
// AMD's matrix instruction calculator): lane l holds a = A[l % 16][l / 16]
// and b = B[l / 16][l % 16]; acc[i] += D[4 * (l / 16) + i][l % 16] of A * B.
inline void mfma16x16x4F32(float a, float b, float (&acc)[4], const char* file = __builtin_FILE(),
                           int line = __builtin_LINE()) {
  BlockRunner& r = BlockRunner::active();
  if (r.thread().warp_size != 64) r.fail("mfma needs a wave of 64");
  const float mine[2] = {a, b};
  const float* all = reinterpret_cast<const float*>(r.warpSnapshot(mine, sizeof(mine), file, line));
  const int lane = r.thread().lane;
  const int col = lane % 16, row0 = 4 * (lane / 16);
  for (int i = 0; i < 4; ++i) {
    float sum = acc[i];
    for (int k = 0; k < 4; ++k) sum += all[2 * ((row0 + i) + 16 * k)] * all[2 * (col + 16 * k) + 1];
    acc[i] = sum;
  }
}

}  // namespace tandem::emu

// atomics: blocks run one at a time on one OS thread, but keep them atomic
// so the semantics do not depend on that.
template <class T>
T atomicAdd(T* address, T v) {
  return std::atomic_ref<T>(*address).fetch_add(v);
}
template <class T>
T atomicMax(T* address, T v) {
  std::atomic_ref<T> a(*address);
  T old = a.load();
  while (old < v && !a.compare_exchange_weak(old, v)) {
  }
  return old;
}
template <class T>
T atomicMin(T* address, T v) {
  std::atomic_ref<T> a(*address);
  T old = a.load();
  while (v < old && !a.compare_exchange_weak(old, v)) {
  }
  return old;
}
template <class T>
T atomicExch(T* address, T v) {
  return std::atomic_ref<T>(*address).exchange(v);
}
template <class T>
T atomicCAS(T* address, T compare, T v) {
  std::atomic_ref<T>(*address).compare_exchange_strong(compare, v);
  return compare;
}
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }

inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __expf(float x) { return std::exp(x); }
inline float __fdividef(float a, float b) { return a / b; }
