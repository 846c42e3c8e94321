// The emulator's semantics, with small kernels written for the purpose:
// barriers, lockstep shuffles and ballots at wave 64 and 32, shared memory
// that is per block and bounds-checked, and the failures a GPU would hang or
// corrupt memory on (barrier divergence, exited lanes, out-of-bounds shared
// access) reported as errors. Streams run in order; events order streams.
#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/hip/device_utils.h"

namespace tandem::kernels::hip {
namespace {

static __global__ void reverseInBlock(const int* in, int* out) {
  TANDEM_SHARED(int, tile, [256]);
  const int i = threadIdx.x;
  tile[i] = in[blockIdx.x * blockDim.x + i];
  __syncthreads();
  out[blockIdx.x * blockDim.x + i] = tile[blockDim.x - 1 - i];
}

static __global__ void warpOps(const float* in, float* sums, float* shifted,
                               unsigned long long* votes) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const float v = in[i];
  sums[i] = gpu::warpSum(v);
  shifted[i] = __shfl_down(v, 3u);
  votes[i] = TANDEM_BALLOT(v > 0.5f);
}

static __global__ void earlyExitThenBarrier(int* out) {
  if (threadIdx.x == 5) return;
  __syncthreads();
  out[threadIdx.x] = 1;
}

static __global__ void twoBarriers(int* out) {
  if (threadIdx.x < 32) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = 1;
}

static __global__ void sharedOutOfBounds(int* out) {
  TANDEM_SHARED(int, tile, [64]);
  tile[threadIdx.x + 1] = 1;  // the last thread writes one past the end
  __syncthreads();
  out[threadIdx.x] = tile[threadIdx.x];
}

static __global__ void shuffleFromExitedLane(float* out) {
  if (threadIdx.x % 2 == 1) return;
  out[threadIdx.x] = TANDEM_SHFL_XOR(1.0f, 1);
}

static __global__ void addOne(int* x) { x[threadIdx.x] += 1; }

class EmulatorTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { emu::setWarpSize(GetParam()); }

  template <class T>
  T* device(const std::vector<T>& host) {
    void* p = nullptr;
    EXPECT_EQ(hipMalloc(&p, host.size() * sizeof(T)), hipSuccess);
    EXPECT_EQ(hipMemcpy(p, host.data(), host.size() * sizeof(T), hipMemcpyHostToDevice),
              hipSuccess);
    allocations_.push_back(p);
    return static_cast<T*>(p);
  }
  template <class T>
  std::vector<T> host(const T* p, size_t n) {
    std::vector<T> out(n);
    EXPECT_EQ(hipMemcpy(out.data(), p, n * sizeof(T), hipMemcpyDeviceToHost), hipSuccess);
    return out;
  }
  void TearDown() override {
    for (void* p : allocations_) EXPECT_EQ(hipFree(p), hipSuccess);
  }
  // launches a failing kernel and returns why it failed.
  std::string failureOf(hipError_t launched) {
    EXPECT_EQ(launched, hipSuccess);
    EXPECT_EQ(hipDeviceSynchronize(), hipErrorLaunchFailure);
    return emu::lastFailure();
  }

  std::vector<void*> allocations_;
};

TEST_P(EmulatorTest, SharedMemoryIsPerBlockAndBarriersOrderIt) {
  std::vector<int> in(512);
  for (int i = 0; i < 512; ++i) in[i] = i;
  int* d_in = device(in);
  int* d_out = device(std::vector<int>(512, -1));
  ASSERT_EQ(gpu::launch("reverse", reverseInBlock, dim3(2), dim3(256), nullptr, d_in, d_out),
            hipSuccess);
  const std::vector<int> out = host(d_out, 512);
  for (int b = 0; b < 2; ++b) {
    for (int i = 0; i < 256; ++i) ASSERT_EQ(out[b * 256 + i], b * 256 + 255 - i);
  }
}

TEST_P(EmulatorTest, WarpCollectivesFollowHipSemantics) {
  const int ws = GetParam();
  const int n = 128;
  std::vector<float> in(n);
  for (int i = 0; i < n; ++i) in[i] = static_cast<float>((i * 37) % 11) / 10.0f;
  float* d_in = device(in);
  float* d_sums = device(std::vector<float>(n));
  float* d_shifted = device(std::vector<float>(n));
  auto* d_votes = device(std::vector<unsigned long long>(n));
  ASSERT_EQ(
      gpu::launch("warp_ops", warpOps, dim3(1), dim3(n), nullptr, d_in, d_sums, d_shifted, d_votes),
      hipSuccess);
  const auto sums = host(d_sums, n), shifted = host(d_shifted, n);
  const auto votes = host(d_votes, n);
  for (int w = 0; w < n / ws; ++w) {
    double want = 0;
    unsigned long long want_votes = 0;
    for (int l = 0; l < ws; ++l) {
      want += in[w * ws + l];
      if (in[w * ws + l] > 0.5f) want_votes |= 1ull << l;
    }
    for (int l = 0; l < ws; ++l) {
      const int i = w * ws + l;
      EXPECT_NEAR(sums[i], want, 1e-4) << i;
      EXPECT_EQ(shifted[i], l + 3 < ws ? in[i + 3] : in[i]) << i;  // off the end: own value
      EXPECT_EQ(votes[i], want_votes) << i;
    }
  }
}

TEST_P(EmulatorTest, ReportsAThreadThatExitsBeforeABarrier) {
  int* d_out = device(std::vector<int>(64));
  const std::string why =
      failureOf(gpu::launch("early_exit", earlyExitThenBarrier, dim3(1), dim3(64), nullptr, d_out));
  EXPECT_NE(why.find("barrier divergence"), std::string::npos) << why;
  EXPECT_NE(why.find("has already exited"), std::string::npos) << why;
  EXPECT_NE(why.find("early_exit"), std::string::npos) << why;
}

TEST_P(EmulatorTest, ReportsThreadsWaitingAtDifferentBarriers) {
  int* d_out = device(std::vector<int>(64));
  const std::string why =
      failureOf(gpu::launch("two_barriers", twoBarriers, dim3(1), dim3(64), nullptr, d_out));
  EXPECT_NE(why.find("barrier divergence"), std::string::npos) << why;
  EXPECT_NE(why.find("emulator_test.cc"), std::string::npos) << why;
}

TEST_P(EmulatorTest, ReportsOutOfBoundsSharedMemoryAccess) {
  int* d_out = device(std::vector<int>(64));
  const std::string why =
      failureOf(gpu::launch("oob", sharedOutOfBounds, dim3(1), dim3(64), nullptr, d_out));
  EXPECT_NE(why.find("shared memory out of bounds: tile[64] with extent 64"), std::string::npos)
      << why;
}

TEST_P(EmulatorTest, ReportsAShuffleThatReadsAnExitedLane) {
  float* d_out = device(std::vector<float>(64));
  const std::string why = failureOf(
      gpu::launch("shuffle_exited", shuffleFromExitedLane, dim3(1), dim3(64), nullptr, d_out));
  EXPECT_NE(why.find("inactive"), std::string::npos) << why;
}

TEST_P(EmulatorTest, RejectsBlocksOfMoreThan1024Threads) {
  int* d_out = device(std::vector<int>(2048));
  EXPECT_EQ(gpu::launch("too_big", addOne, dim3(1), dim3(2048), nullptr, d_out),
            hipErrorInvalidConfiguration);
  EXPECT_EQ(hipGetLastError(), hipErrorInvalidConfiguration);
  EXPECT_EQ(hipGetLastError(), hipSuccess);
}

TEST_P(EmulatorTest, StreamsRunInOrderAndEventsOrderThem) {
  int* d_x = device(std::vector<int>(64, 0));
  hipStream_t a, b;
  hipEvent_t done;
  ASSERT_EQ(hipStreamCreate(&a), hipSuccess);
  ASSERT_EQ(hipStreamCreate(&b), hipSuccess);
  ASSERT_EQ(hipEventCreate(&done), hipSuccess);
  std::vector<int> staged(64, 0);
  ASSERT_EQ(gpu::launch("add_one", addOne, dim3(1), dim3(64), a, d_x), hipSuccess);
  ASSERT_EQ(gpu::launch("add_one", addOne, dim3(1), dim3(64), a, d_x), hipSuccess);
  EXPECT_EQ(hipEventQuery(done), hipSuccess);  // never recorded
  ASSERT_EQ(hipEventRecord(done, a), hipSuccess);
  EXPECT_EQ(hipEventQuery(done), hipErrorNotReady);  // queued work has not run
  ASSERT_EQ(hipStreamWaitEvent(b, done), hipSuccess);
  ASSERT_EQ(hipMemcpyAsync(staged.data(), d_x, 64 * sizeof(int), hipMemcpyDeviceToHost, b),
            hipSuccess);
  ASSERT_EQ(hipStreamSynchronize(b), hipSuccess);  // runs a up to the event first
  EXPECT_EQ(staged, std::vector<int>(64, 2));
  EXPECT_EQ(hipEventQuery(done), hipSuccess);
  EXPECT_EQ(hipEventDestroy(done), hipSuccess);
  EXPECT_EQ(hipStreamDestroy(a), hipSuccess);
  EXPECT_EQ(hipStreamDestroy(b), hipSuccess);
}

// the KV staging of a worker drives a transfer stream from its own threads
// while the engine's thread launches kernels: every call holds the device,
// so both streams' work completes exactly once and in order.
TEST_P(EmulatorTest, HostThreadsDriveTheirOwnStreamsSideBySide) {
  constexpr int kRounds = 2000;
  int* d_x = device(std::vector<int>(64, 0));
  int* d_y = device(std::vector<int>(64, 7));
  hipStream_t compute, transfer;
  ASSERT_EQ(hipStreamCreate(&compute), hipSuccess);
  ASSERT_EQ(hipStreamCreate(&transfer), hipSuccess);
  std::atomic<bool> copies_ok{true};
  std::thread copier([&] {
    void* pinned = nullptr;
    if (hipHostMalloc(&pinned, 64 * sizeof(int), 0) != hipSuccess) {
      copies_ok = false;
      return;
    }
    std::vector<int> back(64);
    for (int i = 0; i < kRounds; ++i) {
      std::vector<int> src(64, i);
      std::memcpy(pinned, src.data(), 64 * sizeof(int));
      bool ok = hipMemcpyAsync(d_y, pinned, 64 * sizeof(int), hipMemcpyHostToDevice, transfer) ==
                hipSuccess;
      ok = ok && hipStreamSynchronize(transfer) == hipSuccess;
      // a synchronous copy waits for the whole device: it runs the other
      // thread's queued kernels too
      ok = ok && hipMemcpy(back.data(), d_y, 64 * sizeof(int), hipMemcpyDeviceToHost) ==
                     hipSuccess;
      if (!ok || back != src) copies_ok = false;
    }
    if (hipHostFree(pinned) != hipSuccess) copies_ok = false;
  });
  for (int i = 0; i < kRounds; ++i) {
    ASSERT_EQ(gpu::launch("add_one", addOne, dim3(1), dim3(64), compute, d_x), hipSuccess);
    if (i % 10 == 9) {
      ASSERT_EQ(hipStreamSynchronize(compute), hipSuccess);
    }
  }
  copier.join();
  ASSERT_EQ(hipStreamSynchronize(compute), hipSuccess);
  EXPECT_TRUE(copies_ok.load());
  EXPECT_EQ(host(d_x, 64), std::vector<int>(64, kRounds));
  EXPECT_EQ(hipStreamDestroy(compute), hipSuccess);
  EXPECT_EQ(hipStreamDestroy(transfer), hipSuccess);
}

TEST_P(EmulatorTest, HostRegistrationsAreRememberedUntilUnregistered) {
  std::vector<char> memory(4096);
  const size_t before = emu::liveHostRegistrations();
  ASSERT_EQ(hipHostRegister(memory.data(), 2048, hipHostRegisterDefault), hipSuccess);
  EXPECT_EQ(emu::liveHostRegistrations(), before + 1);
  // overlapping the range from either side is refused, as HIP does
  EXPECT_EQ(hipHostRegister(memory.data() + 1024, 2048, hipHostRegisterDefault),
            hipErrorInvalidValue);
  ASSERT_EQ(hipHostRegister(memory.data() + 2048, 2048, hipHostRegisterDefault), hipSuccess);
  EXPECT_EQ(hipHostUnregister(memory.data() + 1024), hipErrorInvalidValue);  // not a start
  EXPECT_EQ(hipHostUnregister(memory.data()), hipSuccess);
  EXPECT_EQ(hipHostUnregister(memory.data()), hipErrorInvalidValue);  // once
  EXPECT_EQ(hipHostUnregister(memory.data() + 2048), hipSuccess);
  EXPECT_EQ(emu::liveHostRegistrations(), before);
}

INSTANTIATE_TEST_SUITE_P(WaveSizes, EmulatorTest, ::testing::Values(64, 32),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "wave" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace tandem::kernels::hip
