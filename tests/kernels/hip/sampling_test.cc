// Parity of the sampling helpers (softmax with temperature, top-k, top-p),
// run on the host emulator, with straightforward CPU references written
// here (the reference backend has no sampling ops): rows of one element,
// rows longer than a block, ties (lower id first), k = 1 and k = cols.
// The hip kernels have no cpu counterpart, so these run at wave 64 and 32
// only.
#include <algorithm>
#include <numeric>

#include "kernels/hip/sampling.h"
#include "tests/kernels/backend_parity_fixture.h"

namespace tandem::kernels::hip {
namespace {

using HipSamplingTest = BackendTest;

std::vector<double> softmaxRef(const float* x, int64_t n, float temperature) {
  double m = -INFINITY;
  for (int64_t j = 0; j < n; ++j) m = std::max(m, static_cast<double>(x[j]) / temperature);
  std::vector<double> p(n);
  double total = 0;
  for (int64_t j = 0; j < n; ++j) total += p[j] = std::exp(x[j] / temperature - m);
  for (double& v : p) v /= total;
  return p;
}

TEST_P(HipSamplingTest, SoftmaxMatchesWithTemperature) {
  for (int64_t cols : {int64_t{1}, int64_t{5}, int64_t{1000}}) {
    for (float temperature : {1.0f, 0.7f}) {
      const Tensor x = random(DType::kF32, 3, cols, 8.0f);
      const Tensor dx = toDevice(x);
      ASSERT_EQ(launchSoftmax(dx.as<float>(), 3, cols, temperature, dx.as<float>(), nullptr),
                hipSuccess);
      const Tensor got = toHost(dx);
      for (int r = 0; r < 3; ++r) {
        const std::vector<double> want = softmaxRef(x.as<float>() + r * cols, cols, temperature);
        for (int64_t j = 0; j < cols; ++j) {
          ASSERT_NEAR(got.as<float>()[r * cols + j], want[j], 1e-6) << r << "," << j;
        }
      }
    }
  }
}

TEST_P(HipSamplingTest, TopKReturnsTheLargestInOrderWithTiesToLowerIds) {
  const int64_t cols = 700;
  Tensor x = random(DType::kF32, 2, cols);
  // ties across blocks of threads and warps
  for (int64_t j : {3, 300, 301, 650}) x.as<float>()[j] = 2.0f;
  x.as<float>()[cols + 5] = x.as<float>()[cols + 699] = -3.0f;
  for (int k : {1, 6, 64}) {
    const Tensor values = toDevice(zeros(DType::kF32, 2, k));
    const Tensor ids = toDevice(zeros(DType::kI32, 2, k));
    ASSERT_EQ(launchTopK(toDevice(x).as<float>(), 2, cols, k, values.as<float>(), ids.as<int32_t>(),
                         nullptr),
              hipSuccess);
    const Tensor got_v = toHost(values), got_i = toHost(ids);
    for (int r = 0; r < 2; ++r) {
      std::vector<int32_t> order(cols);
      std::iota(order.begin(), order.end(), 0);
      const float* row = x.as<float>() + r * cols;
      std::stable_sort(order.begin(), order.end(),
                       [&](int32_t a, int32_t b) { return row[a] > row[b]; });
      for (int i = 0; i < k; ++i) {
        ASSERT_EQ(got_i.as<int32_t>()[r * k + i], order[i]) << "row " << r << " rank " << i;
        ASSERT_EQ(got_v.as<float>()[r * k + i], row[order[i]]);
      }
    }
  }
  EXPECT_EQ(launchTopK(nullptr, 1, 5, 6, nullptr, nullptr, nullptr), hipErrorInvalidValue);
}

TEST_P(HipSamplingTest, TopPKeepsTheShortestPrefixReachingP) {
  const std::vector<float> probs = {0.5f,  0.3f,  0.1f,  0.1f,   // p 0.8 -> 2
                                    0.9f,  0.05f, 0.03f, 0.02f,  // p 0.8 -> 1
                                    0.25f, 0.25f, 0.25f, 0.2f};  // never reaches: all 4
  const Tensor keep = toDevice(zeros(DType::kI32, 3, 1));
  const Tensor dp = toDevice(Tensor::of(probs.data(), DType::kF32, 3, 4));
  ASSERT_EQ(launchTopP(dp.as<float>(), 3, 4, 0.8f, keep.as<int32_t>(), nullptr), hipSuccess);
  const Tensor got = toHost(keep);
  EXPECT_EQ(got.as<int32_t>()[0], 2);
  EXPECT_EQ(got.as<int32_t>()[1], 1);
  EXPECT_EQ(got.as<int32_t>()[2], 4);
}

INSTANTIATE_TEST_SUITE_P(Emu, HipSamplingTest, ::testing::ValuesIn(hipOnEmulatorBackends()),
                         backendName);

}  // namespace
}  // namespace tandem::kernels::hip
