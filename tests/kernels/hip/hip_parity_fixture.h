// Shared fixture of the hip kernels' parity tests: the hip backend on the
// host emulator at a given wave size (64 as CDNA, 32 as RDNA/NVIDIA), the
// reference backend, and helpers that move host tensors to and from the
// device through the backend's own upload/download.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/emu/runtime.h"
#include "kernels/hip/hip_backend.h"
#include "kernels/reference/reference_backend.h"

namespace tandem::kernels::hip {

inline std::string waveName(const ::testing::TestParamInfo<int>& info) {
  return "wave" + std::to_string(info.param);
}

class HipParityTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    emu::setWarpSize(GetParam());
    auto backend = HipBackend::create();
    ASSERT_TRUE(backend.ok()) << backend.status();
    hip_ = std::move(*backend);
  }
  void TearDown() override {
    device_.clear();
    hip_.reset();
  }

  // a host tensor of `dtype` filled with uniform values in [-scale, scale].
  Tensor random(DType dtype, int64_t rows, int64_t cols, float scale = 1.0f) {
    Tensor t = zeros(dtype, rows, cols);
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
  // the same contents in device memory of the hip backend.
  Tensor toDevice(const Tensor& host) {
    auto buf = hip_->allocate(std::max<size_t>(host.bytes(), 1));
    EXPECT_TRUE(buf.ok());
    hip_->upload((*buf)->data(), host.data, host.bytes());
    device_.push_back(std::move(*buf));
    return Tensor::of(device_.back()->data(), host.dtype, host.rows, host.cols);
  }
  void* deviceBytes(const void* host, size_t bytes) {
    return toDevice(Tensor::of(host, DType::kI32, 1, static_cast<int64_t>(bytes / 4))).data;
  }
  // waits for the device (failing the test with the kernel's error) and
  // copies `dev` back into a fresh host tensor.
  Tensor toHost(const Tensor& dev) {
    const absl::Status s = hip_->checkedSynchronize();
    EXPECT_TRUE(s.ok()) << s;
    Tensor t = zeros(dev.dtype, dev.rows, dev.cols);
    hip_->download(t.data, dev.data, dev.bytes());
    return t;
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
  HipBackendPtr hip_;
  ReferenceBackend ref_;
  std::vector<std::vector<char>> storage_;
  std::vector<BufferPtr> device_;
};

}  // namespace tandem::kernels::hip
