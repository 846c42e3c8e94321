// Parity of every backend's dense ops (embedding, rmsNorm, matmul, rope,
// siluMul, add, gatherRows) with the reference backend, one test per
// (backend, case), on shapes that are not multiples of any tile or vector
// width: one row, one element, rows just past a tile edge, every weight
// dtype. m <= 8 runs the hip gemv, larger m its 64x64x16 tiled gemm.
// Tolerances are the backend's own (backends_under_test.cc).
#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "tests/kernels/backend_parity_fixture.h"

namespace tandem::kernels {
namespace {

constexpr DType kWeightDtypes[] = {DType::kF32, DType::kF16, DType::kBF16};

std::string dt(DType dtype) { return std::string(dtypeName(dtype)); }

// --- embedding ---

struct EmbeddingCase {
  DType dtype;
  int64_t vocab, dim;
  std::vector<int32_t> ids;
  std::string name() const {
    return dt(dtype) + "_" + std::to_string(vocab) + "x" + std::to_string(dim);
  }
};

std::vector<EmbeddingCase> embeddingCases() {
  std::vector<EmbeddingCase> out;
  for (DType dtype : kWeightDtypes) {
    out.push_back({dtype, 50, 37, {3, 0, 49, 3, 17}});
    out.push_back({dtype, 37, 67, {0, 36, 5, 5, 17}});
  }
  return out;
}

using EmbeddingParityTest = BackendParityTest<EmbeddingCase>;

TEST_P(EmbeddingParityTest, ConvertsRowsOfEveryDtypeExactly) {
  const EmbeddingCase& c = testCase();
  const Tensor table = random(c.dtype, c.vocab, c.dim);
  const Tensor ids = ints(c.ids);
  const int64_t n = static_cast<int64_t>(c.ids.size());
  const Tensor want = zeros(DType::kF32, n, c.dim);
  ref_.embedding(table, ids, want);
  const Tensor out = toDevice(zeros(DType::kF32, n, c.dim));
  backend().embedding(toDevice(table), toDevice(ids), out);
  expectNear(toHost(out), want, 0.0f);
}

TANDEM_PARITY_CASES(Embedding, EmbeddingParityTest, embeddingCases());

// --- rmsNorm ---

struct RmsNormCase {
  DType weight_dtype;
  int64_t rows, dim;
  int heads;  // > 1: per-head norm (qwen3's q norm) of [rows, heads * dim]
  float x_scale;
  float eps;
  bool in_place;
  std::string name() const {
    return dt(weight_dtype) + "_" + std::to_string(rows) + "x" + std::to_string(heads) + "x" +
           std::to_string(dim) + (in_place ? "_inplace" : "");
  }
};

std::vector<RmsNormCase> rmsNormCases() {
  std::vector<RmsNormCase> out;
  for (DType dtype : kWeightDtypes) {
    for (int64_t dim : {1, 15, 37, 130, 768}) out.push_back({dtype, 9, dim, 1, 3.0f, 1e-5f, false});
    for (int64_t dim : {1, 7, 64, 300, 1000}) out.push_back({dtype, 3, dim, 1, 4.0f, 1e-5f, true});
  }
  // qwen3's q norm: [tokens, heads * head_dim] seen as [tokens * heads, head_dim]
  out.push_back({DType::kF32, 5, 24, 3, 2.0f, 1e-6f, true});
  return out;
}

using RmsNormParityTest = BackendParityTest<RmsNormCase>;

TEST_P(RmsNormParityTest, MatchesReferenceOnShortAndLongRows) {
  const RmsNormCase& c = testCase();
  const int64_t rows = c.rows * c.heads;
  const Tensor x = random(DType::kF32, c.rows, c.heads * c.dim, c.x_scale);
  const Tensor w = random(c.weight_dtype, 1, c.dim);
  const Tensor want = zeros(DType::kF32, rows, c.dim);
  ref_.rmsNorm(x.reshaped(rows, c.dim), w, c.eps, want);
  const Tensor dx = toDevice(x).reshaped(rows, c.dim);
  const Tensor out = c.in_place ? dx : toDevice(zeros(DType::kF32, rows, c.dim));
  backend().rmsNorm(dx, toDevice(w), c.eps, out);
  expectNear(toHost(out), want, tol().norm);
}

TANDEM_PARITY_CASES(RmsNorm, RmsNormParityTest, rmsNormCases());

// --- matmul ---

struct MatmulCase {
  int64_t m, n, k;
  DType weight_dtype;
  bool bias;
  float w_scale;
  std::string name() const {
    return dt(weight_dtype) + "_" + std::to_string(m) + "x" + std::to_string(n) + "x" +
           std::to_string(k) + (bias ? "_bias" : "");
  }
};

std::vector<MatmulCase> matmulCases() {
  struct Shape {
    int64_t m, n, k;
    float w_scale;
  };
  const Shape shapes[] = {
      {1, 37, 67, 0.5f}, {1, 256, 768, 0.5f}, {2, 19, 130, 0.5f},  {3, 33, 257, 0.5f},
      {4, 64, 16, 0.5f}, {5, 7, 1, 0.5f},     {71, 45, 100, 0.5f}, {130, 70, 33, 0.5f},
      {1, 1, 1, 1.0f},   {1, 37, 70, 1.0f},   {3, 130, 65, 1.0f},  {8, 5, 300, 1.0f},
      {9, 65, 17, 1.0f}, {70, 129, 33, 1.0f}, {64, 64, 16, 1.0f},  {20, 3, 1, 1.0f},
      {16, 37, 70, 1.0f}};
  std::vector<MatmulCase> out;
  for (DType dtype : kWeightDtypes) {
    for (const Shape& s : shapes) {
      for (bool bias : {false, true}) out.push_back({s.m, s.n, s.k, dtype, bias, s.w_scale});
    }
  }
  return out;
}

using MatmulParityTest = BackendParityTest<MatmulCase>;

TEST_P(MatmulParityTest, MatchesReferenceForGemvAndTiledGemmShapes) {
  const MatmulCase& c = testCase();
  const Tensor x = random(DType::kF32, c.m, c.k);
  const Tensor w = random(c.weight_dtype, c.n, c.k, c.w_scale);
  const Tensor bias = random(DType::kF32, 1, c.n);
  const Tensor want = zeros(DType::kF32, c.m, c.n);
  const bool rounds = entry().rounds_gemm_operands && c.m > 8 && c.weight_dtype != DType::kF32;
  ref_.matmul(rounds ? roundedTo(x, c.weight_dtype) : x, w, c.bias ? &bias : nullptr, want);
  const Tensor y = toDevice(zeros(DType::kF32, c.m, c.n));
  const Tensor dbias = toDevice(bias);
  backend().matmul(toDevice(x), toDevice(w), c.bias ? &dbias : nullptr, y);
  expectNear(toHost(y), want, tol().matmul);
}

TANDEM_PARITY_CASES(Matmul, MatmulParityTest, matmulCases());
INSTANTIATE_TEST_SUITE_P(MatmulOwnKernels, MatmulParityTest,
                         ::testing::Combine(::testing::ValuesIn(hipOwnKernelsOnEmulatorBackends()),
                                            ::testing::ValuesIn(matmulCases())),
                         parityName<MatmulCase>);

// --- matmuls: several weights sharing x (q, k, v; gate, up) ---

struct MatmulsCase {
  int64_t m, k;
  DType weight_dtype;
  std::string name() const {
    return dt(weight_dtype) + "_" + std::to_string(m) + "x" + std::to_string(k) + "_qkv";
  }
};

std::vector<MatmulsCase> matmulsCases() {
  std::vector<MatmulsCase> out;
  for (DType dtype : kWeightDtypes) {
    for (int64_t m : {3, 20}) out.push_back({m, 64, dtype});
  }
  return out;
}

using MatmulsParityTest = BackendParityTest<MatmulsCase>;

TEST_P(MatmulsParityTest, EachOutputMatchesItsOwnMatmul) {
  const MatmulsCase& c = testCase();
  const Tensor x = random(DType::kF32, c.m, c.k);
  const bool rounds = entry().rounds_gemm_operands && c.m > 8 && c.weight_dtype != DType::kF32;
  const Tensor xr = rounds ? roundedTo(x, c.weight_dtype) : x;
  const int64_t widths[] = {37, 16, 16};
  std::vector<Tensor> ws, ys, wants, dws;
  const Tensor bias = random(DType::kF32, 1, widths[0]);
  for (int64_t n : widths) {
    ws.push_back(random(c.weight_dtype, n, c.k, 0.5f));
    wants.push_back(zeros(DType::kF32, c.m, n));
    ref_.matmul(xr, ws.back(), ws.size() == 1 ? &bias : nullptr, wants.back());
    dws.push_back(toDevice(ws.back()));
    ys.push_back(toDevice(zeros(DType::kF32, c.m, n)));
  }
  const Tensor dbias = toDevice(bias);
  const Backend::MatmulOutput outputs[] = {
      {&dws[0], &dbias, &ys[0]}, {&dws[1], nullptr, &ys[1]}, {&dws[2], nullptr, &ys[2]}};
  backend().matmuls(toDevice(x), outputs);
  for (size_t i = 0; i < ys.size(); ++i) expectNear(toHost(ys[i]), wants[i], tol().matmul);
}

TANDEM_PARITY_CASES(Matmuls, MatmulsParityTest, matmulsCases());
INSTANTIATE_TEST_SUITE_P(MatmulsOwnKernels, MatmulsParityTest,
                         ::testing::Combine(::testing::ValuesIn(hipOwnKernelsOnEmulatorBackends()),
                                            ::testing::ValuesIn(matmulsCases())),
                         parityName<MatmulsCase>);

// --- rope ---

struct RopeCase {
  RopeStyle style;
  int head_dim;
  float theta;
  bool llama3;        // llama3 frequency scaling, factor 8
  bool freq_factors;  // per-pair divisors 1 + i % 5
  std::vector<int32_t> positions;
  std::string name() const {
    return std::string(style == RopeStyle::kHalf ? "half" : "interleaved") + "_d" +
           std::to_string(head_dim) +
           (llama3         ? "_llama3"
            : freq_factors ? "_freqfactors"
                           : "_plain") +
           "_" + std::to_string(positions.size()) + "positions";
  }
  RopeParams params() const {
    RopeParams p;
    p.style = style;
    p.head_dim = head_dim;
    p.theta = theta;
    p.llama3_scaling = llama3;
    if (llama3) p.factor = 8.0f;
    if (freq_factors) {
      for (int i = 0; i < head_dim / 2; ++i) p.freq_factors.push_back(1.0f + i % 5);
    }
    return p;
  }
};

std::vector<RopeCase> ropeCases() {
  const std::vector<int32_t> many = {0, 1, 15, 16, 17, 511, 4097, 9000, 131000};
  const std::vector<int32_t> few = {0, 1, 17, 8191, 100000};
  std::vector<RopeCase> out;
  for (RopeStyle style : {RopeStyle::kHalf, RopeStyle::kInterleaved}) {
    for (bool llama3 : {false, true}) {
      for (int head_dim : {8, 64, 128}) {
        out.push_back({style, head_dim, llama3 ? 500000.0f : 10000.0f, llama3, false, many});
      }
    }
    out.push_back({style, 8, 10000.0f, false, false, few});
    out.push_back({style, 64, 500000.0f, true, false, few});
    out.push_back({style, 64, 500000.0f, false, true, few});
  }
  return out;
}

using RopeParityTest = BackendParityTest<RopeCase>;

TEST_P(RopeParityTest, MatchesReferenceInBothLayoutsPlainAndScaled) {
  const RopeCase& c = testCase();
  const RopeParams p = c.params();
  const Tensor x = random(DType::kF32, static_cast<int64_t>(c.positions.size()), 3 * c.head_dim);
  const Tensor pos = ints(c.positions);
  const Tensor want = copyOf(x);
  ref_.rope(want, pos, p);
  const Tensor dx = toDevice(x);
  backend().rope(dx, toDevice(pos), p);
  expectNear(toHost(dx), want, tol().rope);
}

TANDEM_PARITY_CASES(Rope, RopeParityTest, ropeCases());

// --- siluMul and add ---

struct SiluMulCase {
  int64_t n;
  float gate_scale, up_scale;
  bool in_place;  // siluMul's out aliases gate
  std::string name() const { return "n" + std::to_string(n) + (in_place ? "_inplace" : ""); }
};

std::vector<SiluMulCase> siluMulCases() {
  std::vector<SiluMulCase> out;
  for (int64_t n : {1, 17, 1003, 70001}) out.push_back({n, 12.0f, 2.0f, false});
  for (int64_t n : {1, 1000, 1100000}) out.push_back({n, 6.0f, 1.0f, true});
  return out;
}

using SiluMulParityTest = BackendParityTest<SiluMulCase>;

TEST_P(SiluMulParityTest, SiluMulAndAddMatchReference) {
  const SiluMulCase& c = testCase();
  const Tensor gate = random(DType::kF32, 1, c.n, c.gate_scale);
  const Tensor up = random(DType::kF32, 1, c.n, c.up_scale);
  const Tensor want = zeros(DType::kF32, 1, c.n), sum = zeros(DType::kF32, 1, c.n);
  ref_.siluMul(gate, up, want);
  ref_.add(gate, up, sum);
  const Tensor dg = toDevice(gate), du = toDevice(up);
  const Tensor dsum = toDevice(zeros(DType::kF32, 1, c.n));
  const Tensor out = c.in_place ? dg : toDevice(zeros(DType::kF32, 1, c.n));
  backend().add(dg, du, dsum);
  backend().siluMul(dg, du, out);
  expectNear(toHost(out), want, tol().silu);
  expectNear(toHost(dsum), sum, 0.0f);
}

TANDEM_PARITY_CASES(SiluMul, SiluMulParityTest, siluMulCases());

// --- gatherRows ---

struct GatherRowsCase {
  int64_t rows, cols;
  std::vector<int32_t> ids;
  std::string name() const { return std::to_string(rows) + "x" + std::to_string(cols); }
};

std::vector<GatherRowsCase> gatherRowsCases() {
  return {{10, 19, {9, 0, 4}}, {9, 130, {8, 0, 3, 3}}};
}

using GatherRowsParityTest = BackendParityTest<GatherRowsCase>;

TEST_P(GatherRowsParityTest, PicksTheNamedRows) {
  const GatherRowsCase& c = testCase();
  const Tensor x = random(DType::kF32, c.rows, c.cols);
  const Tensor ids = ints(c.ids);
  const int64_t n = static_cast<int64_t>(c.ids.size());
  const Tensor want = zeros(DType::kF32, n, c.cols);
  ref_.gatherRows(x, ids, want);
  const Tensor out = toDevice(zeros(DType::kF32, n, c.cols));
  backend().gatherRows(toDevice(x), toDevice(ids), out);
  const Tensor got = toHost(out);
  expectNear(got, want, 0.0f);
  EXPECT_EQ(got.as<float>()[0], x.as<float>()[c.ids[0] * c.cols]);
}

TANDEM_PARITY_CASES(GatherRows, GatherRowsParityTest, gatherRowsCases());

// --- properties every backend has ---

using DenseOpsPropertyTest = BackendTest;

TEST_P(DenseOpsPropertyTest, RopeAtPositionZeroIsIdentity) {
  RopeParams p;
  p.head_dim = 16;
  const Tensor x = random(DType::kF32, 2, 32);
  const Tensor dx = toDevice(x);
  backend().rope(dx, toDevice(ints({0, 0})), p);
  expectNear(toHost(dx), x, 0.0f);
}

TEST_P(DenseOpsPropertyTest, SiluSaturatesWithoutOverflow) {
  const Tensor g = zeros(DType::kF32, 1, 4), ones = zeros(DType::kF32, 1, 4);
  const float values[] = {-1000.0f, -90.0f, 90.0f, 1000.0f};
  std::memcpy(g.data, values, sizeof(values));
  std::fill(ones.as<float>(), ones.as<float>() + 4, 1.0f);
  const Tensor dout = toDevice(zeros(DType::kF32, 1, 4));
  backend().siluMul(toDevice(g), toDevice(ones), dout);
  const Tensor out = toHost(dout);
  EXPECT_NEAR(out.as<float>()[0], 0.0f, 1e-30f);
  EXPECT_NEAR(out.as<float>()[1], 0.0f, 1e-30f);
  EXPECT_FLOAT_EQ(out.as<float>()[2], 90.0f);
  EXPECT_FLOAT_EQ(out.as<float>()[3], 1000.0f);
}

TANDEM_ON_EVERY_BACKEND(Parity, DenseOpsPropertyTest);

}  // namespace
}  // namespace tandem::kernels
