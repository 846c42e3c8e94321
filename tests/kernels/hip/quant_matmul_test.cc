// The hip matmul with block-quantized weights (q8_0, q4_0, q4_k, q6_k) on
// the host emulator, at wave sizes 64 and 32, against the reference: each
// weight row dequantized with quant::dequantizeRow (common/quant_blocks.h),
// then the reference backend's F32 matmul of the operands each path sees.
// Decode shapes (m <= 8) run the integer-dot gemv: x goes through its 8-bit
// blocks (quant_dot_device.h), so the reference takes x' = d * round(x / d).
// Prefill shapes run the vendor BLAS on F16 operands (the reference rounds x
// and the dequantized weights to F16) or, on the `_own` backends, the gemm
// whose weight tiles are dequantized into LDS (F32 operands). n is no
// multiple of any tile, k whole blocks. The weights are random bytes with
// bounded scales, so every nibble, high bit and packed 6-bit scale reaches
// the result: a kernel reading one of them from the wrong place fails by far
// more than the tolerance.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "common/quant_blocks.h"
#include "kernels/reference/operand_rounding.h"
#include "tests/kernels/backend_parity_fixture.h"

namespace tandem::kernels {
namespace {

struct QuantMatmulCase {
  DType weight_dtype;
  int64_t m, n, k;
  bool bias;
  std::string name() const {
    return std::string(dtypeName(weight_dtype)) + "_" + std::to_string(m) + "x" +
           std::to_string(n) + "x" + std::to_string(k) + (bias ? "_bias" : "");
  }
};

void PrintTo(const QuantMatmulCase& c, std::ostream* os) { *os << c.name(); }

std::vector<QuantMatmulCase> cases() {
  std::vector<QuantMatmulCase> out;
  for (DType dtype : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K}) {
    out.push_back({dtype, 1, 67, 256, false});  // decode: one row, a weight row a wave
    out.push_back({dtype, 3, 37, 512, false});  // two weight rows a wave
    out.push_back({dtype, 5, 37, 512, true});   // four weight rows a wave, n cut
    out.push_back({dtype, 8, 45, 768, false});  // the most rows, units past a wave
    out.push_back({dtype, 37, 67, 256, true});  // prefill: two column tiles, one cut
  }
  return out;
}

using HipQuantMatmulTest = BackendParityTest<QuantMatmulCase>;

TEST_P(HipQuantMatmulTest, MatchesDequantizedF32Reference) {
  const QuantMatmulCase& c = testCase();
  std::vector<char> blocks = randomQuantBlocks(c.weight_dtype, c.n, c.k, rng());
  const Tensor w = Tensor::of(blocks.data(), c.weight_dtype, c.n, c.k);
  ASSERT_EQ(w.bytes(), blocks.size());
  const Tensor w_f32 = zeros(DType::kF32, c.n, c.k);
  for (int64_t r = 0; r < c.n; ++r) {
    quant::dequantizeRow(c.weight_dtype, blocks.data() + r * w.rowBytes(),
                         w_f32.as<float>() + r * c.k, c.k);
  }
  const Tensor x = random(DType::kF32, c.m, c.k);
  const Tensor bias = random(DType::kF32, 1, c.n);
  const Tensor want = zeros(DType::kF32, c.m, c.n);
  if (c.m <= 8) {
    const Tensor xq = copyOf(x);
    roundTripActQ8(xq.as<float>(), xq.numel(), quant::activationGroup(c.weight_dtype));
    ref_.matmul(xq, w_f32, c.bias ? &bias : nullptr, want);
  } else if (entry().rounds_gemm_operands) {
    ref_.matmul(roundedTo(x, DType::kF16), roundedTo(w_f32, DType::kF16), c.bias ? &bias : nullptr,
                want);
  } else {
    ref_.matmul(x, w_f32, c.bias ? &bias : nullptr, want);
  }

  // the weights come in as a model's do: their raw bytes through importHost
  auto imported = backend().importHost(blocks.data(), w.bytes());
  ASSERT_TRUE(imported.ok()) << imported.status();
  const Tensor dw = Tensor::of(**imported, c.weight_dtype, c.n, c.k);
  const Tensor y = toDevice(zeros(DType::kF32, c.m, c.n));
  const Tensor dbias = toDevice(bias);
  backend().matmul(toDevice(x), dw, c.bias ? &dbias : nullptr, y);
  const Tensor got = toHost(y);
  imported->reset();
  expectNear(got, want, tol().matmul);
}

// q, k and v of one quantized type sharing x: x is quantized (decode) or
// rounded (prefill) once for the three, each result as its own matmul's.
TEST_P(HipQuantMatmulTest, SharedXGivesEachOutputItsOwnResult) {
  const QuantMatmulCase& c = testCase();
  const Tensor x = random(DType::kF32, c.m, c.k);
  const Tensor xr = copyOf(x);
  if (c.m <= 8) roundTripActQ8(xr.as<float>(), xr.numel(), quant::activationGroup(c.weight_dtype));
  if (c.m > 8 && entry().rounds_gemm_operands) roundTo16Bit(xr.as<float>(), xr.numel(), DType::kF16);
  std::vector<std::vector<char>> blocks;
  std::vector<BufferPtr> imported;
  std::vector<Tensor> dws, ys, wants;
  for (int64_t n : {c.n, int64_t{16}, int64_t{16}}) {
    blocks.push_back(randomQuantBlocks(c.weight_dtype, n, c.k, rng()));
    const Tensor w_f32 = zeros(DType::kF32, n, c.k);
    const size_t row_bytes = blocks.back().size() / n;
    for (int64_t r = 0; r < n; ++r) {
      quant::dequantizeRow(c.weight_dtype, blocks.back().data() + r * row_bytes,
                           w_f32.as<float>() + r * c.k, c.k);
    }
    if (c.m > 8 && entry().rounds_gemm_operands) {
      roundTo16Bit(w_f32.as<float>(), w_f32.numel(), DType::kF16);
    }
    wants.push_back(zeros(DType::kF32, c.m, n));
    ref_.matmul(xr, w_f32, nullptr, wants.back());
    auto buf = backend().importHost(blocks.back().data(), blocks.back().size());
    ASSERT_TRUE(buf.ok()) << buf.status();
    dws.push_back(Tensor::of(**buf, c.weight_dtype, n, c.k));
    imported.push_back(std::move(*buf));
    ys.push_back(toDevice(zeros(DType::kF32, c.m, n)));
  }
  const Backend::MatmulOutput outputs[] = {
      {&dws[0], nullptr, &ys[0]}, {&dws[1], nullptr, &ys[1]}, {&dws[2], nullptr, &ys[2]}};
  backend().matmuls(toDevice(x), outputs);
  for (size_t i = 0; i < ys.size(); ++i) expectNear(toHost(ys[i]), wants[i], tol().matmul);
  imported.clear();
}

INSTANTIATE_TEST_SUITE_P(QuantMatmul, HipQuantMatmulTest,
                         ::testing::Combine(::testing::ValuesIn(hipOnEmulatorBackends()),
                                            ::testing::ValuesIn(cases())),
                         parityName<QuantMatmulCase>);
INSTANTIATE_TEST_SUITE_P(QuantMatmulOwnKernels, HipQuantMatmulTest,
                         ::testing::Combine(::testing::ValuesIn(hipOwnKernelsOnEmulatorBackends()),
                                            ::testing::ValuesIn(cases())),
                         parityName<QuantMatmulCase>);

}  // namespace
}  // namespace tandem::kernels
