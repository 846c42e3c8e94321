// The cpu backend's matmul with block-quantized weights (q8_0, q4_0, q4_k,
// q6_k) against dequantizeRow() followed by an exact F32 matmul, at every
// simd level this processor has (avx512 with its AVX512-VNNI dots), on decode (integer dots over 8-bit
// activations) and prefill (dequantized panels + the dense gemm) shapes.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "common/quant_blocks.h"
#include "common/quantize.h"
#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/quant_amx.h"
#include "kernels/cpu/quant_dot.h"
#include "kernels/cpu/quant_matmul.h"

namespace tandem::kernels::cpu {
namespace {

struct Case {
  DType dtype;
  int64_t m, n, k;
  SimdLevel level;
  int threads;
};

std::string caseName(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return std::string(dtypeName(c.dtype)) + "_m" + std::to_string(c.m) + "_n" + std::to_string(c.n) +
         "_k" + std::to_string(c.k) + "_" + std::string(simdLevelName(c.level)) + "_t" +
         std::to_string(c.threads);
}

std::vector<float> randomValues(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(count);
  for (float& f : v) f = dist(rng);
  return v;
}

class QuantMatmulTest : public testing::TestWithParam<Case> {};

// The integer path rounds each activation to its block's 8-bit grid: the
// error of x[k] is at most amax(block of k) / 254 (half a step of amax/127),
// so |y - y_exact| <= sum_k |w[k]| * amax(block(k)) / 254, plus float
// rounding of the sums. It runs for up to kQuantDotMaxRows rows of x, and
// for prefill where the level's table says so (prefill32, prefill256). The
// panel path is F32 throughout: float rounding only.
TEST_P(QuantMatmulTest, MatchesDequantizedF32) {
  const Case c = GetParam();
  const std::vector<float> w_f = randomValues(c.n * c.k, 1);
  std::vector<float> x = randomValues(c.m * c.k, 2);
  const std::vector<float> bias = randomValues(c.n, 3);
  const size_t row_bytes = rowBytes(c.dtype, c.k);
  std::vector<char> w_q(row_bytes * c.n);
  std::vector<float> w_dq(c.n * c.k);
  for (int64_t j = 0; j < c.n; ++j) {
    quant::quantizeRow(c.dtype, w_f.data() + j * c.k, w_q.data() + j * row_bytes, c.k);
    quant::dequantizeRow(c.dtype, w_q.data() + j * row_bytes, w_dq.data() + j * c.k, c.k);
  }
  auto backend = CpuBackend::create({.num_threads = c.threads, .simd_level = c.level});
  ASSERT_TRUE(backend.ok()) << backend.status();
  std::vector<float> y(c.m * c.n, NAN);
  const Tensor bias_t = Tensor::of(bias.data(), DType::kF32, 1, c.n);
  (*backend)->matmul(Tensor::of(x.data(), DType::kF32, c.m, c.k),
                     Tensor::of(w_q.data(), c.dtype, c.n, c.k), &bias_t,
                     Tensor::of(y.data(), DType::kF32, c.m, c.n));

  const int64_t block = usesBlock256(c.dtype) ? 256 : 32;
  const QuantDotTable& dots = quantDotsFor(c.level);
  const bool integer_path =
      c.m <= kQuantDotMaxRows || (usesBlock256(c.dtype) ? dots.prefill256 : dots.prefill32);
  for (int64_t r = 0; r < c.m; ++r) {
    std::vector<float> amax(c.k / block, 0.0f);
    for (int64_t i = 0; i < c.k; ++i) {
      amax[i / block] = std::max(amax[i / block], std::fabs(x[r * c.k + i]));
    }
    for (int64_t j = 0; j < c.n; ++j) {
      double exact = bias[j], magnitude = std::fabs(bias[j]), quant_bound = 0.0;
      for (int64_t i = 0; i < c.k; ++i) {
        const double wv = w_dq[j * c.k + i], xv = x[r * c.k + i];
        exact += wv * xv;
        magnitude += std::fabs(wv * xv);
        quant_bound += std::fabs(wv) * amax[i / block] / 254.0;
      }
      const double tol = (integer_path ? quant_bound * 1.01 : 0.0) + 2e-5 * magnitude + 1e-5;
      ASSERT_NEAR(y[r * c.n + j], exact, tol) << "row " << r << " col " << j;
    }
  }
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (DType t : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K}) {
    for (SimdLevel level : {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
      // decode, small batches (partial and full-plus-partial groups of a
      // table's 4 or 8 rows), the integer path's edge, prefill just past it
      // and a long one; odd weight row counts everywhere.
      for (int64_t m : {int64_t{1}, int64_t{3}, int64_t{6}, int64_t{11}, kQuantDotMaxRows, kQuantDotMaxRows + 1,
                        int64_t{67}}) {
        out.push_back({t, m, 37, 512, level, 1});
      }
      out.push_back({t, 1, 300, 768, level, 2});   // threaded decode
      out.push_back({t, 40, 131, 256, level, 2});  // threaded prefill, a partial panel
      out.push_back({t, 16, 300, 768, level, 2});  // threaded 16-sequence decode
      // threaded batch: partial 4x4 output tiles in both directions, guided ranges
      out.push_back({t, 13, 301, 512, level, 2});
    }
    if (!usesBlock256(t)) out.push_back({t, 2, 5, 96, SimdLevel::kAvx2, 1});
    if (!usesBlock256(t)) out.push_back({t, 2, 5, 96, SimdLevel::kAvx512, 1});
    // 11 blocks: a run of 8 (grouped activations) and 3 after it
    if (!usesBlock256(t)) out.push_back({t, 11, 37, 352, SimdLevel::kAvx512, 1});
    // and prefill of such rows
    if (!usesBlock256(t)) out.push_back({t, 35, 9, 352, SimdLevel::kAvx512, 2});
  }
  // only the levels this processor runs (every x86-64 host of this kind has avx2)
  std::erase_if(out, [](const Case& c) { return c.level > detectSimdLevel(); });
  return out;
}

INSTANTIATE_TEST_SUITE_P(Formats, QuantMatmulTest, testing::ValuesIn(cases()), caseName);

// where a level's prefill runs on its dots, each group of kQuantDotMaxRows
// rows of x (and the partial last one) gets, bit for bit, what a matmul of
// that group alone (the batch path) gets.
TEST(QuantPrefillTest, OnTheDotsIsTheBatchPathPerGroup) {
  int tested = 0;
  for (DType t : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K}) {
    for (SimdLevel level : {SimdLevel::kAvx2, SimdLevel::kAvx512}) {
      const QuantDotTable& dots = quantDotsFor(level);
      if (level > detectSimdLevel() || !(usesBlock256(t) ? dots.prefill256 : dots.prefill32)) continue;
      std::vector<Case> group_cases{Case{t, 40, 131, 256, level, 2}, Case{t, 67, 37, 512, level, 1}};
      // 11 blocks a row: a run of 8 (the tiles') and 3 dot-call blocks after it
      if (!usesBlock256(t)) group_cases.push_back(Case{t, 35, 9, 352, level, 2});
      // past one prefill tile call's rows (256)
      if (!usesBlock256(t)) group_cases.push_back(Case{t, 261, 9, 256, level, 2});
      for (const Case& c : group_cases) {
        SCOPED_TRACE(caseName(testing::TestParamInfo<Case>(c, 0)));
        const std::vector<float> w_f = randomValues(c.n * c.k, 1);
        const std::vector<float> x = randomValues(c.m * c.k, 2);
        const std::vector<float> bias = randomValues(c.n, 3);
        const size_t row_bytes = rowBytes(c.dtype, c.k);
        std::vector<char> w_q(row_bytes * c.n);
        for (int64_t j = 0; j < c.n; ++j) {
          quant::quantizeRow(c.dtype, w_f.data() + j * c.k, w_q.data() + j * row_bytes, c.k);
        }
        // the dots' prefill, not the AMX tiles that take it where there are some
        auto backend = CpuBackend::create({.num_threads = c.threads, .simd_level = c.level, .amx = false});
        ASSERT_TRUE(backend.ok()) << backend.status();
        const Tensor w_t = Tensor::of(w_q.data(), c.dtype, c.n, c.k);
        const Tensor bias_t = Tensor::of(bias.data(), DType::kF32, 1, c.n);
        std::vector<float> y(c.m * c.n, NAN);
        (*backend)->matmul(Tensor::of(x.data(), DType::kF32, c.m, c.k), w_t, &bias_t,
                           Tensor::of(y.data(), DType::kF32, c.m, c.n));
        for (int64_t r0 = 0; r0 < c.m; r0 += kQuantDotMaxRows) {
          const int64_t rows = std::min(kQuantDotMaxRows, c.m - r0);
          std::vector<float> g(rows * c.n, NAN);
          (*backend)->matmul(Tensor::of(x.data() + r0 * c.k, DType::kF32, rows, c.k), w_t, &bias_t,
                             Tensor::of(g.data(), DType::kF32, rows, c.n));
          for (int64_t i = 0; i < rows * c.n; ++i) {
            ASSERT_EQ(y[r0 * c.n + i], g[i]) << "row " << r0 + i / c.n << " col " << i % c.n;
          }
        }
        ++tested;
      }
    }
  }
  // every x86-64 host of this kind has avx2, whose k-quants prefill on the dots
  if (detectSimdLevel() >= SimdLevel::kAvx2) {
    EXPECT_GE(tested, 4);
  }
}

// every simd table computes the same integer sums as the scalar one for
// 1..table.rows activation rows at a time (the register-blocked kernels); only
// the float accumulation order differs. The tables this processor cannot run
// must hand out a lower one instead.
std::vector<const QuantDotTable*> runnableTables() {
  std::vector<const QuantDotTable*> out;
  if (detectSimdLevel() >= SimdLevel::kAvx2) {
    out.push_back(&avx2QuantDots());
    if (avx2QuantDots().single_row != nullptr) out.push_back(avx2QuantDots().single_row);
    if (processorHasAvxVnni()) out.push_back(&avxVnniQuantDots());
  }
  if (detectSimdLevel() >= SimdLevel::kAvx512 && processorHasAvx512Vnni()) {
    out.push_back(&avx512VnniQuantDots());
  }
  return out;
}

TEST(QuantDotTablesTest, DispatchFollowsTheProcessor) {
  EXPECT_EQ(&quantDotsFor(SimdLevel::kScalar), &scalarQuantDots());
  if (detectSimdLevel() < SimdLevel::kAvx2) {
    // without avx2 the dispatch must never hand out the avx2 dots
    EXPECT_EQ(&quantDotsFor(detectSimdLevel()), &scalarQuantDots());
    return;
  }
  const QuantDotTable& for_avx2 = quantDotsFor(SimdLevel::kAvx2);
  EXPECT_EQ(for_avx2.level, SimdLevel::kAvx2);
  EXPECT_EQ(for_avx2.vnni, processorHasAvxVnni());
  if (!processorHasAvxVnni()) {
    EXPECT_EQ(&avxVnniQuantDots(), &avx2QuantDots());
  }
  if (detectSimdLevel() >= SimdLevel::kAvx512) {
    const QuantDotTable& for_avx512 = quantDotsFor(SimdLevel::kAvx512);
    if (processorHasAvx512Vnni()) {
      EXPECT_EQ(for_avx512.level, SimdLevel::kAvx512);
      EXPECT_TRUE(for_avx512.vnni);
    } else {
      EXPECT_EQ(&for_avx512, &for_avx2);
    }
  }
}

// TANDEM_CPU_VNNI=off hands out the maddubs table at both simd levels (an
// AVX2-only processor's dots, measured on one with VNNI); unset, the
// dispatch is the processor's again.
// sets an environment variable for its lifetime, then puts back what was there
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* before = std::getenv(name);
    if (before != nullptr) saved_ = before;
    ::setenv(name, value, 1);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    if (saved_.has_value()) {
      ::setenv(name_, saved_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> saved_;
};

TEST(QuantDotTablesTest, VnniOffIsTheMaddubsTable) {
  ScopedEnv vnni("TANDEM_CPU_VNNI", "off");
  EXPECT_EQ(&quantDotsFor(SimdLevel::kScalar), &scalarQuantDots());
  EXPECT_EQ(&quantDotsFor(SimdLevel::kAvx2), &avx2QuantDots());
  EXPECT_EQ(&quantDotsFor(SimdLevel::kAvx512), &avx2QuantDots());
  EXPECT_FALSE(quantDotsFor(SimdLevel::kAvx512).vnni);
  ::setenv("TANDEM_CPU_VNNI", "1", 1);
  EXPECT_EQ(&quantDotsFor(SimdLevel::kAvx2), &avxVnniQuantDots());
  EXPECT_EQ(&quantDotsFor(SimdLevel::kAvx512), &avx512VnniQuantDots());
}

// each SIMD table this processor runs, against the scalar one (none where
// the processor has no AVX2: DispatchFollowsTheProcessor checks that the
// scalar table is handed out there).
class SimdTableTest : public ::testing::TestWithParam<const QuantDotTable*> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SimdTableTest);

TEST_P(SimdTableTest, MatchesScalar) {
  const QuantDotTable* v = GetParam();
  const int64_t k = 1024, rows = kDotRows + 1;  // a stride longer than the rows dotted
  const std::vector<float> w = randomValues(k, 4), x = randomValues(rows * k, 5);
  const QuantDotTable& s = scalarQuantDots();
  std::vector<ActBlock32> xs32(rows * k / 32);
  std::vector<ActBlock256> xs256(rows * k / 256);
  for (int64_t r = 0; r < rows; ++r) {
    s.quantize32(x.data() + r * k, xs32.data() + r * (k / 32), k);
    s.quantize256(x.data() + r * k, xs256.data() + r * (k / 256), k);
  }
  // VPDPBUSD's int32 sums take unsigned activations; maddubs's int16 pairs would saturate
  EXPECT_EQ(v->x32_offset, v->vnni ? 128 : 0);
  std::vector<ActBlock32> xv32(rows * k / 32);
  std::vector<ActBlock256> xv256(rows * k / 256);
  for (int64_t r = 0; r < rows; ++r) {
    v->quantize32(x.data() + r * k, xv32.data() + r * (k / 32), k);
    v->quantize256(x.data() + r * k, xv256.data() + r * (k / 256), k);
  }
  for (size_t b = 0; b < xs32.size(); ++b) {
    // the same scales and values, stored with the table's offset and grouping
    const int64_t row_blocks = k / 32, row = static_cast<int64_t>(b) / row_blocks;
    ASSERT_EQ(xs32[b].d, act32Scale(*v, xv32.data() + row * row_blocks, row_blocks, b % row_blocks));
    for (int l = 0; l < 32; ++l) {
      ASSERT_EQ(xs32[b].qs[l], act32Value(*v, xv32.data() + row * row_blocks, row_blocks, b % row_blocks, l))
          << "block " << b << " value " << l;
    }
  }
  for (size_t b = 0; b < xs256.size(); ++b) {
    for (int l = 0; l < 256; ++l) {
      ASSERT_EQ(xs256[b].qs[l], act256Value(*v, xv256[b], l)) << "block " << b << " value " << l;
    }
    ASSERT_EQ(std::memcmp(xs256[b].bsums, xv256[b].bsums, sizeof(xs256[b].bsums)), 0);
    ASSERT_EQ(std::memcmp(xs256[b].sub_sums, xv256[b].sub_sums, sizeof(xs256[b].sub_sums)), 0);
  }
  for (DType t : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K}) {
    std::vector<char> wq(rowBytes(t, k));
    quant::quantizeRow(t, w.data(), wq.data(), k);
    for (int n_rows = 1; n_rows <= v->rows; ++n_rows) {
      // rows 1, 2, ...: the stride, not the row count, places each row
      float a[kDotRows], b[kDotRows];
      switch (t) {
        case DType::kQ8_0:
          s.dotQ8_0(wq.data(), xs32.data() + k / 32, k / 32, n_rows, k, a);
          v->dotQ8_0(wq.data(), xv32.data() + k / 32, k / 32, n_rows, k, b);
          break;
        case DType::kQ4_0:
          s.dotQ4_0(wq.data(), xs32.data() + k / 32, k / 32, n_rows, k, a);
          v->dotQ4_0(wq.data(), xv32.data() + k / 32, k / 32, n_rows, k, b);
          break;
        case DType::kQ4_K:
          s.dotQ4_K(wq.data(), xs256.data() + k / 256, k / 256, n_rows, k, a);
          v->dotQ4_K(wq.data(), xv256.data() + k / 256, k / 256, n_rows, k, b);
          break;
        default:
          s.dotQ6_K(wq.data(), xs256.data() + k / 256, k / 256, n_rows, k, a);
          v->dotQ6_K(wq.data(), xv256.data() + k / 256, k / 256, n_rows, k, b);
          break;
      }
      for (int r = 0; r < n_rows; ++r) {
        EXPECT_NEAR(a[r], b[r], 1e-4 * (std::fabs(a[r]) + 1))
            << dtypeName(t) << " rows " << n_rows << " row " << r;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Runnable, SimdTableTest, ::testing::ValuesIn(runnableTables()),
                         [](const ::testing::TestParamInfo<const QuantDotTable*>& info) {
                           const QuantDotTable& t = *info.param;
                           return std::string(simdLevelName(t.level)) + (t.vnni ? "_vnni" : "") + "_rows" +
                                  std::to_string(t.rows);
                         });

// the tile of weight kind t gives the dot calls' numbers bit for bit (see
// TilesAreTheDotsBitForBit); xq holds kMaxRows quantized rows of k.
template <typename Act>
void expectTileIsTheDots(const QuantDotTable& v, DType t, DotTileFn<Act> tile, DotRowsFn<Act> dot,
                         const std::vector<Act>& xq, int64_t k, int max_rows) {
  const int64_t x_blocks = k / (std::is_same_v<Act, ActBlock256> ? 256 : 32);
  const size_t row_bytes = rowBytes(t, k);
  std::vector<char> wq(row_bytes * kTileWeights);
  const std::vector<float> w = randomValues(kTileWeights * k, 8);
  for (int c = 0; c < kTileWeights; ++c) quant::quantizeRow(t, w.data() + c * k, wq.data() + c * row_bytes, k);
  const void* rows_w[kTileWeights];
  for (int c = 0; c < kTileWeights; ++c) rows_w[c] = wq.data() + c * row_bytes;
  std::vector<int> row_counts;
  for (int r = 1; r <= kTileRows + 2; ++r) row_counts.push_back(r);
  row_counts.push_back(2 * kTileRows + 1);
  row_counts.push_back(max_rows);
  for (int weights = 1; weights <= kTileWeights; ++weights) {
    for (int rows : row_counts) {
      std::vector<float> got(kTileWeights * max_rows, -1.0f);
      tile(rows_w, weights, xq.data(), x_blocks, rows, k, got.data(), max_rows);
      for (int c = 0; c < weights; ++c) {
        std::vector<float> want(rows);
        for (int r0 = 0; r0 < rows; r0 += v.rows) {
          dot(rows_w[c], xq.data() + r0 * x_blocks, x_blocks, std::min(v.rows, rows - r0), k, want.data() + r0);
        }
        for (int r = 0; r < rows; ++r) {
          ASSERT_EQ(got[c * max_rows + r], want[r]) << dtypeName(t) << " k " << k << " weights " << weights
                                                    << " rows " << rows << " weight " << c << " row " << r;
        }
      }
    }
  }
}

// a table's tiles give its dot calls' numbers bit for bit: every count of
// weight rows, of activation rows up to a tile's and past it (prefill's
// calls), and k past a chunk of packed runs.
TEST(QuantDotTablesTest, TilesAreTheDotsBitForBit) {
  int tested = 0;
  for (const QuantDotTable* v : runnableTables()) {
    SCOPED_TRACE(std::string(simdLevelName(v->level)) + (v->vnni ? "+vnni" : ""));
    // rows past kTileRows: prefill's tiles, all rows of x in one call
    constexpr int kMaxRows = 2 * kTileRows + 3;
    for (int64_t k : {int64_t{256}, int64_t{2304}}) {
      const std::vector<float> x = randomValues(kMaxRows * k, 7);
      std::vector<ActBlock32> x32(kMaxRows * k / 32);
      std::vector<ActBlock256> x256(kMaxRows * k / 256);
      for (int r = 0; r < kMaxRows; ++r) {
        v->quantize32(x.data() + r * k, x32.data() + r * (k / 32), k);
        v->quantize256(x.data() + r * k, x256.data() + r * (k / 256), k);
      }
      for (DType t : {DType::kQ8_0, DType::kQ4_0}) {
        const DotTileFn<ActBlock32> tile = t == DType::kQ8_0 ? v->tileQ8_0 : v->tileQ4_0;
        if (tile == nullptr) continue;
        expectTileIsTheDots(*v, t, tile, t == DType::kQ8_0 ? v->dotQ8_0 : v->dotQ4_0, x32, k, kMaxRows);
        ++tested;
      }
      if (v->tileQ4_K != nullptr) {
        expectTileIsTheDots(*v, DType::kQ4_K, v->tileQ4_K, v->dotQ4_K, x256, k, kMaxRows);
        ++tested;
      }
    }
  }
  if (tested == 0) {
    // no table with tiles runs here: the matmuls must not be handed one
    const QuantDotTable& best = quantDotsFor(detectSimdLevel());
    EXPECT_EQ(best.tileQ8_0, nullptr);
    EXPECT_EQ(best.tileQ4_0, nullptr);
    EXPECT_EQ(best.tileQ4_K, nullptr);
  }
}

// a weight of n rows of k values quantized to `dtype`.
std::vector<char> quantizedWeight(DType dtype, int64_t n, int64_t k, uint32_t seed) {
  const std::vector<float> w = randomValues(n * k, seed);
  const size_t row_bytes = rowBytes(dtype, k);
  std::vector<char> q(row_bytes * n);
  for (int64_t j = 0; j < n; ++j) quant::quantizeRow(dtype, w.data() + j * k, q.data() + j * row_bytes, k);
  return q;
}

// matmuls() (q, k and v; gate and up) gives each weight's y exactly as its
// own matmul() does, grouped (one quantized x, one task list) or not.
// A batch of a Q4_K or Q8_0 weight on the AMX-INT8 tiles (quant_amx.h)
// has the dots' integer sums and scales them in another float order:
// within F32 rounding of the dots' result, for batch sizes from the tiles'
// least to kQuantDotMaxRows, weight rows past a 16-row group (a last group
// of 6), one and two threads, and for Q8_0 a row of 17 blocks (not a
// multiple of the kernel's 4, nor of a grouped activation run's 8), also
// with TANDEM_CPU_VNNI=off (x quantized by the maddubs table: no +128
// offset). Without AMX-INT8 (or below the avx512 level) both backends take
// the dots, and agree.
TEST(QuantAmxInt8Test, BatchesMatchTheDots) {
  struct Case {
    DType dtype;
    int64_t k;
    bool vnni_off;
  };
  for (const Case c : {Case{DType::kQ4_K, 512, false}, Case{DType::kQ8_0, 544, false},
                       Case{DType::kQ8_0, 544, true}, Case{DType::kQ4_K, 512, true}, Case{DType::kQ6_K, 768, false},
                       Case{DType::kQ6_K, 512, true}}) {
    std::optional<ScopedEnv> vnni;
    if (c.vnni_off) vnni.emplace("TANDEM_CPU_VNNI", "off");
    for (const int64_t m : {kAmxInt8Q4KMinRows, kAmxInt8Q6KMinRows, int64_t{13}, kQuantDotMaxRows}) {
      for (const int threads : {1, 2}) {
        const int64_t n = 70, k = c.k;
        const DType dtype = c.dtype;
        SCOPED_TRACE(std::string(dtypeName(dtype)) + (c.vnni_off ? " vnni off" : "") + " m " + std::to_string(m) +
                     " threads " + std::to_string(threads));
        const std::vector<float> w_f = randomValues(n * k, 1);
        const std::vector<float> x = randomValues(m * k, 2);
        const std::vector<float> bias = randomValues(n, 3);
        const size_t row_bytes = rowBytes(dtype, k);
        std::vector<char> w_q(row_bytes * n);
        std::vector<float> w_dq(n * k);
        for (int64_t j = 0; j < n; ++j) {
          quant::quantizeRow(dtype, w_f.data() + j * k, w_q.data() + j * row_bytes, k);
          quant::dequantizeRow(dtype, w_q.data() + j * row_bytes, w_dq.data() + j * k, k);
        }
        std::vector<float> y_tiles(m * n, NAN), y_dots(m * n, NAN);
        for (const bool amx : {true, false}) {
          auto backend = CpuBackend::create({.num_threads = threads, .simd_level = detectSimdLevel(), .amx = amx});
          ASSERT_TRUE(backend.ok());
          const Tensor bias_t = Tensor::of(bias.data(), DType::kF32, 1, n);
          (*backend)->matmul(Tensor::of(x.data(), DType::kF32, m, k), Tensor::of(w_q.data(), dtype, n, k),
                             &bias_t, Tensor::of((amx ? y_tiles : y_dots).data(), DType::kF32, m, n));
        }
        for (int64_t r = 0; r < m; ++r) {
          for (int64_t j = 0; j < n; ++j) {
            double magnitude = std::fabs(bias[j]);
            for (int64_t i = 0; i < k; ++i) magnitude += std::fabs(w_dq[j * k + i] * x[r * k + i]);
            ASSERT_NEAR(y_tiles[r * n + j], y_dots[r * n + j], 1e-6 * magnitude) << "row " << r << " col " << j;
          }
        }
      }
    }
  }
}

TEST(QuantMatmulGroupTest, EachOutputIsItsOwnMatmulBitForBit) {
  const int64_t k = 512;
  struct Weight {
    DType dtype;
    int64_t n;
    bool bias;
  };
  const std::vector<std::vector<Weight>> groups = {
      {{DType::kQ4_K, 300, true}, {DType::kQ6_K, 37, false}, {DType::kQ4_K, 64, true}},  // grouped
      {{DType::kQ8_0, 131, false}, {DType::kQ4_0, 9, true}},                              // grouped
      {{DType::kQ8_0, 40, false}, {DType::kQ4_K, 40, false}},  // activations differ: one by one
      {{DType::kQ4_K, 40, false}, {DType::kF32, 24, true}},    // a dense weight: one by one
  };
  for (SimdLevel level : {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    if (level > detectSimdLevel()) continue;
    for (int threads : {1, 2}) {
      auto backend = CpuBackend::create({.num_threads = threads, .simd_level = level});
      ASSERT_TRUE(backend.ok()) << backend.status();
      for (int64_t m : {int64_t{1}, int64_t{5}, kQuantDotMaxRows, kQuantDotMaxRows + 3}) {
        for (size_t g = 0; g < groups.size(); ++g) {
          SCOPED_TRACE(std::string(simdLevelName(level)) + " threads " + std::to_string(threads) + " m " +
                       std::to_string(m) + " group " + std::to_string(g));
          std::vector<float> x = randomValues(m * k, 7);
          const Tensor xt = Tensor::of(x.data(), DType::kF32, m, k);
          std::vector<std::vector<char>> w_data;
          std::vector<std::vector<float>> biases, alone, together;
          std::vector<Tensor> w_t, b_t, alone_t, together_t;
          for (size_t i = 0; i < groups[g].size(); ++i) {
            const Weight& wd = groups[g][i];
            if (wd.dtype == DType::kF32) {
              const std::vector<float> f = randomValues(wd.n * k, 20 + i);
              w_data.emplace_back(reinterpret_cast<const char*>(f.data()),
                                  reinterpret_cast<const char*>(f.data() + f.size()));
            } else {
              w_data.push_back(quantizedWeight(wd.dtype, wd.n, k, 20 + static_cast<uint32_t>(i)));
            }
            biases.push_back(randomValues(wd.n, 40 + static_cast<uint32_t>(i)));
            alone.emplace_back(m * wd.n, NAN);
            together.emplace_back(m * wd.n, NAN);
          }
          std::vector<kernels::Backend::MatmulOutput> outputs;
          for (size_t i = 0; i < groups[g].size(); ++i) {
            const Weight& wd = groups[g][i];
            w_t.push_back(Tensor::of(w_data[i].data(), wd.dtype, wd.n, k));
            b_t.push_back(Tensor::of(biases[i].data(), DType::kF32, 1, wd.n));
            alone_t.push_back(Tensor::of(alone[i].data(), DType::kF32, m, wd.n));
            together_t.push_back(Tensor::of(together[i].data(), DType::kF32, m, wd.n));
          }
          for (size_t i = 0; i < groups[g].size(); ++i) {
            const Tensor* bias = groups[g][i].bias ? &b_t[i] : nullptr;
            (*backend)->matmul(xt, w_t[i], bias, alone_t[i]);
            outputs.push_back({&w_t[i], bias, &together_t[i]});
          }
          (*backend)->matmuls(xt, outputs);
          for (size_t i = 0; i < groups[g].size(); ++i) {
            ASSERT_EQ(std::memcmp(alone[i].data(), together[i].data(), alone[i].size() * sizeof(float)), 0)
                << "weight " << i;
          }
        }
      }
    }
  }
}

TEST(QuantMatmulGroupTest, GroupsOnlyWeightsThatShareXAndItsQuantization) {
  std::vector<float> x(16 * 256), y(16 * 8);
  std::vector<char> w(rowBytes(DType::kQ8_0, 256) * 8);
  const MatmulArgs q4k{x.data(), w.data(), DType::kQ4_K, nullptr, y.data(), 16, 8, 256};
  MatmulArgs q6k = q4k, q8 = q4k, other_x = q4k, dense = q4k, prefill = q4k;
  q6k.w_dtype = DType::kQ6_K;
  q8.w_dtype = DType::kQ8_0;
  other_x.x = x.data() + 256;
  dense.w_dtype = DType::kF16;
  prefill.m = kQuantDotMaxRows + 1;
  EXPECT_TRUE(canGroupQuantMatmuls(std::vector<MatmulArgs>{q4k, q6k}));
  EXPECT_FALSE(canGroupQuantMatmuls(std::vector<MatmulArgs>{q4k, q8}));
  EXPECT_FALSE(canGroupQuantMatmuls(std::vector<MatmulArgs>{q4k, other_x}));
  EXPECT_FALSE(canGroupQuantMatmuls(std::vector<MatmulArgs>{q4k, dense}));
  EXPECT_FALSE(canGroupQuantMatmuls(std::vector<MatmulArgs>{prefill}));
  EXPECT_FALSE(canGroupQuantMatmuls(std::vector<MatmulArgs>{}));
}

}  // namespace
}  // namespace tandem::kernels::cpu
