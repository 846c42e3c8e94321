// The cpu backend's own machinery: its options and aligned buffers. Its ops'
// parity with the reference backend is in tests/kernels/backend_parity_test.cc.
#include <cstdint>
#include <cstdlib>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"

namespace tandem::kernels::cpu {
namespace {

TEST(CpuBackendCreateTest, UsesTheDetectedLevelByDefault) {
  auto backend = CpuBackend::create({.num_threads = 1});
  ASSERT_TRUE(backend.ok());
  if (std::getenv("TANDEM_CPU_SIMD") == nullptr) {
    EXPECT_EQ((*backend)->simdLevel(), detectSimdLevel());
  }
  EXPECT_EQ((*backend)->numThreads(), 1);
  EXPECT_EQ(CpuBackend::create({.num_threads = -1}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CpuBackendCreateTest, ParsesLevelNames) {
  EXPECT_EQ(*parseSimdLevel("avx2"), SimdLevel::kAvx2);
  EXPECT_FALSE(parseSimdLevel("sse9").ok());
}

TEST(CpuBackendCreateTest, AllocatesAlignedBuffers) {
  auto backend = CpuBackend::create({.num_threads = 1});
  ASSERT_TRUE(backend.ok());
  auto buf = (*backend)->allocate(100);
  ASSERT_TRUE(buf.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*buf)->data()) % 64, 0u);
  EXPECT_EQ((*buf)->bytes(), 100u);
}

}  // namespace
}  // namespace tandem::kernels::cpu
