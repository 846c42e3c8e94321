// The hip matmul with block-quantized weights (q8_0, q4_0, q4_k, q6_k) on
// the host emulator, at wave sizes 64 and 32, against the reference: each
// weight row dequantized with quant::dequantizeRow (common/quant_blocks.h),
// then the reference backend's F32 matmul. Decode shapes (m <= 8) run the
// dequantize-in-register gemv, prefill shapes the gemm whose weight tiles are
// dequantized into LDS; n is no multiple of any tile, k whole blocks. The
// weights are random bytes with bounded scales, so every nibble, high bit
// and packed 6-bit scale reaches the result: a kernel reading one of them
// from the wrong place fails by far more than the tolerance.
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "common/quant_blocks.h"
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
    out.push_back({dtype, 1, 67, 256, false});  // decode: one row
    out.push_back({dtype, 5, 37, 512, true});   // decode: a few rows
    out.push_back({dtype, 37, 67, 256, true});  // prefill: two column tiles, one cut
  }
  return out;
}

// random blocks of `dtype` for a [rows, cols] weight: random bytes, with the
// f16 scales drawn so that every weight stays within about [-1, 1].
std::vector<char> randomBlocks(DType dtype, int64_t rows, int64_t cols, std::mt19937& rng) {
  const int64_t blocks = rows * cols / quant::blockValues(dtype);
  std::vector<char> bytes(blocks * quant::blockBytes(dtype));
  std::uniform_int_distribution<int> byte(0, 255);
  for (char& b : bytes) b = static_cast<char>(byte(rng));
  auto scale = [&](float max) {
    return f32ToF16(std::uniform_real_distribution<float>(0.25f * max, max)(rng));
  };
  for (int64_t i = 0; i < blocks; ++i) {
    char* block = bytes.data() + i * quant::blockBytes(dtype);
    switch (dtype) {
      case DType::kQ8_0:
        reinterpret_cast<quant::BlockQ8_0*>(block)->d = scale(1.0f / 127);
        break;
      case DType::kQ4_0:
        reinterpret_cast<quant::BlockQ4_0*>(block)->d = scale(1.0f / 8);
        break;
      case DType::kQ4_K: {
        auto* b = reinterpret_cast<quant::BlockQ4_K*>(block);
        b->d = scale(1.0f / (63 * 15));
        b->dmin = scale(1.0f / 63);
        break;
      }
      case DType::kQ6_K:
        reinterpret_cast<quant::BlockQ6_K*>(block)->d = scale(1.0f / (128 * 32));
        break;
      default:
        ADD_FAILURE() << "not a quantized type";
    }
  }
  return bytes;
}

using HipQuantMatmulTest = BackendParityTest<QuantMatmulCase>;

TEST_P(HipQuantMatmulTest, MatchesDequantizedF32Reference) {
  const QuantMatmulCase& c = testCase();
  std::vector<char> blocks = randomBlocks(c.weight_dtype, c.n, c.k, rng());
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
  ref_.matmul(x, w_f32, c.bias ? &bias : nullptr, want);

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

INSTANTIATE_TEST_SUITE_P(QuantMatmul, HipQuantMatmulTest,
                         ::testing::Combine(::testing::ValuesIn(hipOnEmulatorBackends()),
                                            ::testing::ValuesIn(cases())),
                         parityName<QuantMatmulCase>);

}  // namespace
}  // namespace tandem::kernels
