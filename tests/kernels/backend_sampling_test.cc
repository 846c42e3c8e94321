// Backend::greedyTokens on every backend: the id is std::max_element's over
// the row (the first maximum; a NaN never wins except in column 0), exactly,
// and the log-probability is the row's within float sums.
#include <algorithm>
#include <cmath>
#include <limits>

#include "tests/kernels/backend_parity_fixture.h"

namespace tandem::kernels {
namespace {

using SamplingTest = BackendTest;

TEST_P(SamplingTest, GreedyTokensAreTheFirstMaximumOfEachRowWithItsLogprob) {
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  constexpr float kInf = std::numeric_limits<float>::infinity();
  for (int64_t vocab : {1, 37, 1000, 32000}) {
    constexpr int64_t kRows = 6;
    const Tensor logits = random(DType::kF32, kRows, vocab, 8.0f);
    float* x = logits.as<float>();
    if (vocab > 2) {
      // row 1: the maximum twice, the lower id wins
      x[vocab + vocab / 2] = 100.0f;
      x[vocab + vocab / 3] = 100.0f;
      // row 2: NaN before and after the maximum, which still wins
      x[2 * vocab + 1] = kNaN;
      x[2 * vocab + vocab - 1] = 50.0f;
      x[2 * vocab + vocab - 2] = kNaN;
      // row 3: NaN in column 0 keeps column 0, as std::max_element
      x[3 * vocab] = kNaN;
      // row 4: all -inf but one finite value
      std::fill(x + 4 * vocab, x + 5 * vocab, -kInf);
      x[4 * vocab + vocab - 1] = -3.0f;
    }
    const Tensor ids = toDevice(zeros(DType::kI32, kRows, 1));
    const Tensor logprobs = toDevice(zeros(DType::kF32, kRows, 1));
    backend().greedyTokens(toDevice(logits), ids, logprobs);
    const Tensor got_ids = toHost(ids), got_lp = toHost(logprobs);
    for (int64_t r = 0; r < kRows; ++r) {
      const float* row = x + r * vocab;
      const float* best = std::max_element(row, row + vocab);
      EXPECT_EQ(got_ids.as<int32_t>()[r], best - row) << "vocab " << vocab << " row " << r;
      double sum = 0.0;
      for (int64_t j = 0; j < vocab; ++j) sum += std::exp(static_cast<double>(row[j]) - *best);
      const double want = -std::log(sum);
      const float lp = got_lp.as<float>()[r];
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(lp)) << "vocab " << vocab << " row " << r;
      } else {
        EXPECT_NEAR(lp, want, 1e-5 * (1.0 + std::abs(want))) << "vocab " << vocab << " row " << r;
      }
    }
  }
}

TANDEM_ON_EVERY_BACKEND(Parity, SamplingTest);

}  // namespace
}  // namespace tandem::kernels
