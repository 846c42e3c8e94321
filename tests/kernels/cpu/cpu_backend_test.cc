// Parity of the cpu backend's dense ops with the reference backend, on odd
// shapes, at every simd level this machine has and with 1 and 2 threads.
//
// Tolerances: 1e-5 of max(1, |reference|) for F32 math. F16 and BF16 weights
// convert to F32 exactly, so they are held to the same bound; only the
// accumulation order differs from the reference (which sums in double).
#include <numeric>

#include "kernels/host_buffer.h"
#include "tests/kernels/cpu/parity_fixture.h"

namespace tandem::kernels::cpu {
namespace {

constexpr float kTol = 1e-5f;

using CpuBackendTest = ParityTest;

TEST_P(CpuBackendTest, EmbeddingConvertsRowsOfEveryDtype) {
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
    const Tensor table = random(dt, 50, 37);
    const Tensor ids = ints({3, 0, 49, 3, 17});
    const Tensor got = zeros(DType::kF32, 5, 37), want = zeros(DType::kF32, 5, 37);
    cpu_->embedding(table, ids, got);
    ref_.embedding(table, ids, want);
    expectNear(got, want, 0.0f);
  }
}

TEST_P(CpuBackendTest, RmsNormMatchesReferenceForEveryWeightDtype) {
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (int64_t d : {1, 15, 37, 130, 768}) {
      const Tensor x = random(DType::kF32, 9, d, 3.0f);
      const Tensor w = random(dt, 1, d);
      const Tensor got = zeros(DType::kF32, 9, d), want = zeros(DType::kF32, 9, d);
      cpu_->rmsNorm(x, w, 1e-5f, got);
      ref_.rmsNorm(x, w, 1e-5f, want);
      expectNear(got, want, kTol);
    }
  }
}

TEST_P(CpuBackendTest, RmsNormPerHeadWorksInPlace) {
  // qwen3's q norm: [tokens, heads * head_dim] seen as [tokens * heads, head_dim]
  const Tensor q = random(DType::kF32, 5, 3 * 24, 2.0f);
  const Tensor w = random(DType::kF32, 1, 24);
  const Tensor want = zeros(DType::kF32, 15, 24);
  ref_.rmsNorm(q.reshaped(15, 24), w, 1e-6f, want);
  cpu_->rmsNorm(q.reshaped(15, 24), w, 1e-6f, q.reshaped(15, 24));
  expectNear(q, want, kTol);
}

TEST_P(CpuBackendTest, MatmulMatchesReferenceOnOddShapes) {
  struct Shape {
    int64_t m, n, k;
  };
  const Shape shapes[] = {{1, 37, 67},  {1, 256, 768}, {2, 19, 130}, {3, 33, 257},
                          {4, 64, 16},  {5, 7, 1},     {71, 45, 100}, {130, 70, 33}};
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (const Shape& s : shapes) {
      for (bool with_bias : {false, true}) {
        SCOPED_TRACE(testing::Message() << dtypeName(dt) << " m=" << s.m << " n=" << s.n
                                        << " k=" << s.k << " bias=" << with_bias);
        const Tensor x = random(DType::kF32, s.m, s.k);
        const Tensor w = random(dt, s.n, s.k, 0.5f);
        const Tensor bias = random(DType::kF32, 1, s.n);
        const Tensor got = zeros(DType::kF32, s.m, s.n), want = zeros(DType::kF32, s.m, s.n);
        cpu_->matmul(x, w, with_bias ? &bias : nullptr, got);
        ref_.matmul(x, w, with_bias ? &bias : nullptr, want);
        expectNear(got, want, kTol);
      }
    }
  }
}

TEST_P(CpuBackendTest, RopeMatchesReferenceForBothStylesAndScalings) {
  const std::vector<int32_t> positions = {0, 1, 15, 16, 17, 511, 4097, 9000, 131000};
  for (RopeStyle style : {RopeStyle::kHalf, RopeStyle::kInterleaved}) {
    for (bool llama3 : {false, true}) {
      for (int head_dim : {8, 64, 128}) {
        RopeParams p;
        p.style = style;
        p.head_dim = head_dim;
        p.theta = llama3 ? 500000.0f : 10000.0f;
        p.llama3_scaling = llama3;
        p.factor = 8.0f;
        const Tensor x = random(DType::kF32, static_cast<int64_t>(positions.size()), 3 * head_dim);
        const Tensor want = copyOf(x);
        cpu_->rope(x, ints(positions), p);
        ref_.rope(want, ints(positions), p);
        expectNear(x, want, kTol);
      }
    }
  }
}

TEST_P(CpuBackendTest, RopeAtPositionZeroIsIdentity) {
  RopeParams p;
  p.head_dim = 16;
  const Tensor x = random(DType::kF32, 2, 32);
  const Tensor before = copyOf(x);
  cpu_->rope(x, ints({0, 0}), p);
  expectNear(x, before, 0.0f);
}

TEST_P(CpuBackendTest, SiluMulAndAddMatchReference) {
  for (int64_t n : {1, 17, 1003, 70001}) {
    const Tensor g = random(DType::kF32, 1, n, 12.0f), u = random(DType::kF32, 1, n, 2.0f);
    const Tensor got = zeros(DType::kF32, 1, n), want = zeros(DType::kF32, 1, n);
    cpu_->siluMul(g, u, got);
    ref_.siluMul(g, u, want);
    expectNear(got, want, kTol);
    cpu_->add(g, u, got);
    ref_.add(g, u, want);
    expectNear(got, want, 0.0f);
  }
}

TEST_P(CpuBackendTest, SiluSaturatesWithoutOverflow) {
  const Tensor g = zeros(DType::kF32, 1, 4), ones = zeros(DType::kF32, 1, 4);
  const float values[] = {-1000.0f, -90.0f, 90.0f, 1000.0f};
  std::memcpy(g.data, values, sizeof(values));
  std::fill(ones.as<float>(), ones.as<float>() + 4, 1.0f);
  const Tensor out = zeros(DType::kF32, 1, 4);
  cpu_->siluMul(g, ones, out);
  EXPECT_NEAR(out.as<float>()[0], 0.0f, 1e-30f);
  EXPECT_NEAR(out.as<float>()[1], 0.0f, 1e-30f);
  EXPECT_FLOAT_EQ(out.as<float>()[2], 90.0f);
  EXPECT_FLOAT_EQ(out.as<float>()[3], 1000.0f);
}

TEST_P(CpuBackendTest, GatherRowsPicksTheNamedRows) {
  const Tensor x = random(DType::kF32, 10, 19);
  const Tensor got = zeros(DType::kF32, 3, 19), want = zeros(DType::kF32, 3, 19);
  cpu_->gatherRows(x, ints({9, 0, 4}), got);
  ref_.gatherRows(x, ints({9, 0, 4}), want);
  expectNear(got, want, 0.0f);
  EXPECT_EQ(got.as<float>()[0], x.as<float>()[9 * 19]);
}

TEST_P(CpuBackendTest, CopyGatherAndScatterMoveWholeBlocks) {
  kvcache::KvLayout layout{2, 3, 5, 4, DType::kF32};
  const int64_t block_floats = static_cast<int64_t>(layout.blockBytes() / sizeof(float));
  const Tensor a = random(DType::kF32, 6, block_floats);
  const Tensor b = zeros(DType::kF32, 6, block_floats);
  const KvCacheView va{a.data, layout, 6}, vb{b.data, layout, 6};
  const std::vector<int32_t> src = {5, 0, 2}, dst = {1, 4, 3};
  cpu_->copyBlocks(va, src, vb, dst);
  for (size_t i = 0; i < src.size(); ++i) {
    EXPECT_EQ(std::memcmp(b.rowRange(dst[i], 1).data, a.rowRange(src[i], 1).data,
                          layout.blockBytes()), 0);
  }
  EXPECT_EQ(b.as<float>()[0], 0.0f);  // block 0 untouched

  const Tensor staging = zeros(DType::kF32, 3, block_floats);
  cpu_->gatherBlocks(va, src, staging.data);
  for (size_t i = 0; i < src.size(); ++i) {
    EXPECT_EQ(std::memcmp(staging.rowRange(i, 1).data, a.rowRange(src[i], 1).data,
                          layout.blockBytes()), 0);
  }
  const Tensor c = zeros(DType::kF32, 6, block_floats);
  cpu_->scatterBlocks(staging.data, dst, KvCacheView{c.data, layout, 6});
  EXPECT_EQ(std::memcmp(c.rowRange(4, 1).data, a.rowRange(0, 1).data, layout.blockBytes()), 0);
}

INSTANTIATE_TEST_SUITE_P(Levels, CpuBackendTest, ::testing::ValuesIn(availableParams()), paramName);

TEST(CpuBackendCreateTest, UsesTheDetectedLevelByDefault) {
  auto backend = CpuBackend::create({.num_threads = 1});
  ASSERT_TRUE(backend.ok());
  if (std::getenv("TANDEM_CPU_SIMD") == nullptr) EXPECT_EQ((*backend)->simdLevel(), detectSimdLevel());
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
