// Parity of the elementwise, normalisation, embedding, rope and matmul
// kernels (run on the host emulator) with the reference backend, at wave
// sizes 64 and 32, on shapes that are not multiples of any tile: one row,
// one element, rows just past a tile edge, every weight dtype.
//
// Tolerances: conversions and copies are exact; sums are F32 on the device
// and F64 in the reference, so 1e-5 relative for norms and 1e-4 for dot
// products of up to 300 terms.
#include "tests/kernels/hip/hip_parity_fixture.h"

namespace tandem::kernels::hip {
namespace {

using HipOpsTest = HipParityTest;

TEST_P(HipOpsTest, EmbeddingConvertsEveryDtypeExactly) {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    const Tensor table = random(dtype, 37, 67);
    const Tensor ids = ints({0, 36, 5, 5, 17});
    const Tensor want = zeros(DType::kF32, 5, 67);
    ref_.embedding(table, ids, want);
    const Tensor out = toDevice(zeros(DType::kF32, 5, 67));
    hip_->embedding(toDevice(table), toDevice(ids), out);
    expectNear(toHost(out), want, 0.0f);
  }
}

TEST_P(HipOpsTest, RmsNormMatchesOnShortAndLongRows) {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (int dim : {1, 7, 64, 300, 1000}) {
      const Tensor x = random(DType::kF32, 3, dim, 4.0f);
      const Tensor w = random(dtype, 1, dim);
      const Tensor want = zeros(DType::kF32, 3, dim);
      ref_.rmsNorm(x, w, 1e-5f, want);
      const Tensor dx = toDevice(x);
      hip_->rmsNorm(dx, toDevice(w), 1e-5f, dx);  // in place
      expectNear(toHost(dx), want, 1e-5f);
    }
  }
}

TEST_P(HipOpsTest, MatmulMatchesForGemvAndTiledGemmShapes) {
  struct Shape {
    int m, n, k;
  };
  // m <= 8 runs the gemv; larger m the 64x64x16 tiled gemm
  const Shape shapes[] = {{1, 1, 1},   {1, 37, 70},   {3, 130, 65}, {8, 5, 300},
                          {9, 65, 17}, {70, 129, 33}, {64, 64, 16}, {20, 3, 1}};
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (const Shape& s : shapes) {
      for (bool with_bias : {false, true}) {
        SCOPED_TRACE(std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) +
                     " " + std::string(dtypeName(dtype)) + (with_bias ? " bias" : ""));
        const Tensor x = random(DType::kF32, s.m, s.k);
        const Tensor w = random(dtype, s.n, s.k);
        const Tensor bias = random(DType::kF32, 1, s.n);
        const Tensor want = zeros(DType::kF32, s.m, s.n);
        ref_.matmul(x, w, with_bias ? &bias : nullptr, want);
        const Tensor y = toDevice(zeros(DType::kF32, s.m, s.n));
        const Tensor dbias = toDevice(bias);
        hip_->matmul(toDevice(x), toDevice(w), with_bias ? &dbias : nullptr, y);
        expectNear(toHost(y), want, 1e-4f);
      }
    }
  }
}

TEST_P(HipOpsTest, RopeMatchesInBothLayoutsPlainAndLlama3) {
  for (RopeStyle style : {RopeStyle::kHalf, RopeStyle::kInterleaved}) {
    for (int variant = 0; variant < 3; ++variant) {
      RopeParams p;
      p.style = style;
      p.head_dim = variant == 0 ? 8 : 64;
      p.theta = variant == 0 ? 10000.0f : 500000.0f;
      if (variant == 1) {
        p.llama3_scaling = true;
        p.factor = 8.0f;
      }
      if (variant == 2) {
        for (int i = 0; i < p.head_dim / 2; ++i) p.freq_factors.push_back(1.0f + i % 5);
      }
      const Tensor x = random(DType::kF32, 5, 3 * p.head_dim);
      const Tensor pos = ints({0, 1, 17, 8191, 100000});
      const Tensor want = zeros(DType::kF32, 5, 3 * p.head_dim);
      std::memcpy(want.data, x.data, x.bytes());
      ref_.rope(want, pos, p);
      const Tensor dx = toDevice(x);
      hip_->rope(dx, toDevice(pos), p);
      expectNear(toHost(dx), want, 1e-5f);
    }
  }
}

TEST_P(HipOpsTest, SiluMulAndAddMatchInPlace) {
  for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{1100000}}) {
    const Tensor gate = random(DType::kF32, 1, n, 6.0f), up = random(DType::kF32, 1, n);
    const Tensor want = zeros(DType::kF32, 1, n), sum = zeros(DType::kF32, 1, n);
    ref_.siluMul(gate, up, want);
    ref_.add(gate, up, sum);
    const Tensor dg = toDevice(gate), du = toDevice(up);
    const Tensor dsum = toDevice(zeros(DType::kF32, 1, n));
    hip_->add(dg, du, dsum);
    hip_->siluMul(dg, du, dg);  // out aliases gate
    expectNear(toHost(dg), want, 1e-6f);
    expectNear(toHost(dsum), sum, 0.0f);
  }
}

TEST_P(HipOpsTest, GatherRowsCopiesTheChosenRows) {
  const Tensor x = random(DType::kF32, 9, 130);
  const Tensor rows = ints({8, 0, 3, 3});
  const Tensor want = zeros(DType::kF32, 4, 130);
  ref_.gatherRows(x, rows, want);
  const Tensor out = toDevice(zeros(DType::kF32, 4, 130));
  hip_->gatherRows(toDevice(x), toDevice(rows), out);
  expectNear(toHost(out), want, 0.0f);
}

INSTANTIATE_TEST_SUITE_P(Emu, HipOpsTest, ::testing::Values(64, 32), waveName);

}  // namespace
}  // namespace tandem::kernels::hip
