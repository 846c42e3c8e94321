// Shared fixture of the cpu backend's parity tests: one cpu backend per
// (simd level, thread count) this machine can run, a reference backend, and
// helpers for random tensors in host memory (both backends' device memory).
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/reference/reference_backend.h"

namespace tandem::kernels::cpu {

using ParityParam = std::tuple<SimdLevel, int>;  // level, threads

inline std::vector<ParityParam> availableParams() {
  std::vector<ParityParam> out;
  for (SimdLevel l : {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    if (l > detectSimdLevel()) continue;
    for (int threads : {1, 2}) out.emplace_back(l, threads);
  }
  return out;
}

inline std::string paramName(const ::testing::TestParamInfo<ParityParam>& info) {
  return std::string(simdLevelName(std::get<0>(info.param))) + "_" +
         std::to_string(std::get<1>(info.param)) + "threads";
}

class ParityTest : public ::testing::TestWithParam<ParityParam> {
 protected:
  void SetUp() override {
    CpuBackendOptions options;
    options.simd_level = std::get<0>(GetParam());
    options.num_threads = std::get<1>(GetParam());
    auto backend = CpuBackend::create(options);
    ASSERT_TRUE(backend.ok()) << backend.status();
    cpu_ = std::move(*backend);
  }

  // a host tensor of `dtype` filled with uniform values in [-scale, scale].
  Tensor random(DType dtype, int64_t rows, int64_t cols, float scale = 1.0f) {
    storage_.emplace_back(rows * cols * dtypeSize(dtype) + 64);
    Tensor t = Tensor::of(storage_.back().data(), dtype, rows, cols);
    std::uniform_real_distribution<float> dist(-scale, scale);
    for (int64_t i = 0; i < t.numel(); ++i) storeElement(t.data, dtype, i, dist(rng_));
    return t;
  }
  Tensor zeros(DType dtype, int64_t rows, int64_t cols) {
    storage_.emplace_back(rows * cols * dtypeSize(dtype) + 64, 0);
    return Tensor::of(storage_.back().data(), dtype, rows, cols);
  }
  Tensor ints(const std::vector<int32_t>& values) {
    Tensor t = zeros(DType::kI32, static_cast<int64_t>(values.size()), 1);
    std::copy(values.begin(), values.end(), t.as<int32_t>());
    return t;
  }
  Tensor copyOf(const Tensor& t) {
    Tensor c = zeros(t.dtype, t.rows, t.cols);
    std::memcpy(c.data, t.data, t.bytes());
    return c;
  }

  // every element within rel * max(1, |want|) of the reference.
  static void expectNear(const Tensor& got, const Tensor& want, float rel) {
    ASSERT_EQ(got.numel(), want.numel());
    for (int64_t i = 0; i < got.numel(); ++i) {
      const float g = got.as<float>()[i], w = want.as<float>()[i];
      ASSERT_NEAR(g, w, rel * std::max(1.0f, std::fabs(w))) << "element " << i;
    }
  }

  std::mt19937 rng_{1234};
  CpuBackendPtr cpu_;
  ReferenceBackend ref_;
  std::vector<std::vector<char>> storage_;
};

}  // namespace tandem::kernels::cpu
