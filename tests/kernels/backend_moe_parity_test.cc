// Parity of every backend's mixture-of-experts ops (moeRoute, moeExperts)
// with the reference backend: routing of logits with many experts, and the
// experts' FFN for one token (decode: only the chosen experts), a few
// tokens, and more tokens than experts (tokens sharing experts), for dense
// and block-quantized experts. Quantized experts see their activations
// through the 8-bit blocks (x before gate and up, the SiLU product before
// down), so the reference takes the same round trips.
#include <algorithm>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "common/quant_blocks.h"
#include "kernels/reference/operand_rounding.h"
#include "tests/kernels/backend_parity_fixture.h"

namespace tandem::kernels {
namespace {

// --- moeRoute ---

struct MoeRouteCase {
  int64_t rows;
  int experts, k;
  bool normalize;
  std::string name() const {
    return std::to_string(rows) + "x" + std::to_string(experts) + "_top" + std::to_string(k) +
           (normalize ? "_norm" : "");
  }
};

std::vector<MoeRouteCase> routeCases() {
  return {{1, 8, 2, true}, {7, 8, 2, false}, {3, 64, 8, true}, {33, 128, 8, true}, {2, 5, 5, true}};
}

using MoeRouteParityTest = BackendParityTest<MoeRouteCase>;

TEST_P(MoeRouteParityTest, ChoosesTheReferenceExpertsWithTheirWeights) {
  const MoeRouteCase& c = testCase();
  const Tensor logits = random(DType::kF32, c.rows, c.experts, 4.0f);
  const Tensor want_ids = zeros(DType::kI32, c.rows, c.k);
  const Tensor want_w = zeros(DType::kF32, c.rows, c.k);
  ref_.moeRoute(logits, c.normalize, want_ids, want_w);
  const Tensor ids = toDevice(zeros(DType::kI32, c.rows, c.k));
  const Tensor w = toDevice(zeros(DType::kF32, c.rows, c.k));
  backend().moeRoute(toDevice(logits), c.normalize, ids, w);
  const Tensor got_ids = toHost(ids);
  for (int64_t i = 0; i < want_ids.numel(); ++i) {
    ASSERT_EQ(got_ids.as<int32_t>()[i], want_ids.as<int32_t>()[i]) << "choice " << i;
  }
  expectNear(toHost(w), want_w, 1e-6f);
}

TANDEM_PARITY_CASES(MoeRoute, MoeRouteParityTest, routeCases());

// --- moeExperts ---

struct MoeExpertsCase {
  DType dtype;
  int64_t rows, hidden, ffn;
  int experts, k;
  std::string name() const {
    return std::string(dtypeName(dtype)) + "_" + std::to_string(rows) + "x" + std::to_string(hidden) +
           "x" + std::to_string(ffn) + "_" + std::to_string(experts) + "e_top" + std::to_string(k);
  }
};

std::vector<MoeExpertsCase> expertsCases() {
  std::vector<MoeExpertsCase> out;
  for (DType d : {DType::kF32, DType::kF16, DType::kBF16}) {
    out.push_back({d, 1, 64, 96, 8, 2});    // decode: two experts read
    out.push_back({d, 5, 40, 24, 8, 2});    // no multiple of any vector width
    out.push_back({d, 19, 64, 32, 16, 4});  // more choices than experts: shared
  }
  for (DType d : {DType::kQ8_0, DType::kQ4_K}) {
    out.push_back({d, 1, 256, 256, 8, 2});
    out.push_back({d, 9, 256, 512, 16, 4});
  }
  out.push_back({DType::kQ4_0, 3, 64, 96, 8, 2});
  out.push_back({DType::kQ6_K, 4, 256, 256, 8, 3});
  return out;
}

using MoeExpertsParityTest = BackendParityTest<MoeExpertsCase>;

TEST_P(MoeExpertsParityTest, MatchesEachChoiceThroughTheReferenceOps) {
  const MoeExpertsCase& c = testCase();
  const bool quantized = quant::isQuantized(c.dtype);
  // the stacked experts, and their F32 values for the reference
  std::vector<char> bytes[3];
  Tensor host[3], dense[3];
  const int64_t shapes[3][2] = {{c.experts * c.ffn, c.hidden}, {c.experts * c.ffn, c.hidden},
                                {c.experts * c.hidden, c.ffn}};
  for (int i = 0; i < 3; ++i) {
    const int64_t r = shapes[i][0], k = shapes[i][1];
    if (quantized) {
      bytes[i] = randomQuantBlocks(c.dtype, r, k, rng());
      host[i] = Tensor::of(bytes[i].data(), c.dtype, r, k);
      dense[i] = zeros(DType::kF32, r, k);
      for (int64_t row = 0; row < r; ++row) {
        quant::dequantizeRow(c.dtype, bytes[i].data() + row * host[i].rowBytes(), dense[i].as<float>() + row * k, k);
      }
    } else {
      host[i] = random(c.dtype, r, k, 0.5f);
      dense[i] = host[i];
    }
  }
  // outputs about 1 (two matmuls of a few hundred terms): the tolerance's scale
  const Tensor x = random(DType::kF32, c.rows, c.hidden, 0.25f);
  const Tensor logits = random(DType::kF32, c.rows, c.experts, 4.0f);
  const Tensor ids = zeros(DType::kI32, c.rows, c.k);
  const Tensor weights = zeros(DType::kF32, c.rows, c.k);
  ref_.moeRoute(logits, true, ids, weights);

  // the reference: each choice alone, through the operands the backends see
  const MoeExperts ref_experts{dense[0], dense[1], dense[2], c.experts};
  const Tensor want = zeros(DType::kF32, c.rows, c.hidden);
  const Tensor g = zeros(DType::kF32, 1, c.ffn), u = zeros(DType::kF32, 1, c.ffn);
  const Tensor d = zeros(DType::kF32, 1, c.hidden);
  for (int64_t t = 0; t < c.rows; ++t) {
    const Tensor xt = copyOf(x.rowRange(t, 1));
    if (quantized) roundTripActQ8(xt.as<float>(), c.hidden, quant::activationGroup(c.dtype));
    for (int j = 0; j < c.k; ++j) {
      const int e = ids.as<int32_t>()[t * c.k + j];
      ref_.matmul(xt, ref_experts.gateOf(e), nullptr, g);
      ref_.matmul(xt, ref_experts.upOf(e), nullptr, u);
      ref_.siluMul(g, u, g);
      if (quantized) roundTripActQ8(g.as<float>(), c.ffn, quant::activationGroup(c.dtype));
      ref_.matmul(g, ref_experts.downOf(e), nullptr, d);
      for (int64_t i = 0; i < c.hidden; ++i) {
        want.as<float>()[t * c.hidden + i] += weights.as<float>()[t * c.k + j] * d.as<float>()[i];
      }
    }
  }

  // the experts come in as a model's do: their bytes through importHost
  std::vector<BufferPtr> imported;
  Tensor dev[3];
  for (int i = 0; i < 3; ++i) {
    auto buf = backend().importHost(host[i].data, host[i].bytes());
    ASSERT_TRUE(buf.ok()) << buf.status();
    dev[i] = Tensor::of(**buf, c.dtype, host[i].rows, host[i].cols);
    imported.push_back(std::move(*buf));
  }
  const Tensor out = toDevice(zeros(DType::kF32, c.rows, c.hidden));
  const MoeExperts dev_experts{dev[0], dev[1], dev[2], c.experts};
  const uint64_t read_before = backend().weightBytesRead();
  backend().moeExperts(toDevice(x), dev_experts, toDevice(ids), toDevice(weights), out);
  expectNear(toHost(out), want, tol().matmul);
  // a backend that counts the weights it reads (cpu) counts the chosen
  // experts once each, and no other
  if (const uint64_t read = backend().weightBytesRead() - read_before; read > 0) {
    const std::set<int32_t> chosen(ids.as<int32_t>(), ids.as<int32_t>() + c.rows * c.k);
    uint64_t chosen_bytes = 0;
    for (int32_t e : chosen) {
      chosen_bytes += dev_experts.gateOf(e).bytes() + dev_experts.upOf(e).bytes() + dev_experts.downOf(e).bytes();
    }
    EXPECT_EQ(read, chosen_bytes);
  }
}

TANDEM_PARITY_CASES(MoeExperts, MoeExpertsParityTest, expertsCases());

}  // namespace
}  // namespace tandem::kernels
