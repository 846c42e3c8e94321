#include "tests/kernels/parity_tensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "gtest/gtest.h"
#include "kernels/reference/operand_rounding.h"
#include "kernels/reference/reference_backend.h"  // storeElement

namespace tandem::kernels {

void ParityTensors::attach(Backend* backend, Finish finish) {
  backend_ = backend;
  finish_ = std::move(finish);
}

Tensor ParityTensors::random(DType dtype, int64_t rows, int64_t cols, float scale) {
  Tensor t = zeros(dtype, rows, cols);
  std::uniform_real_distribution<float> dist(-scale, scale);
  for (int64_t i = 0; i < t.numel(); ++i) storeElement(t.data, dtype, i, dist(rng_));
  return t;
}

Tensor ParityTensors::zeros(DType dtype, int64_t rows, int64_t cols) {
  storage_.emplace_back(rows * cols * dtypeSize(dtype) + 64, 0);
  return Tensor::of(storage_.back().data(), dtype, rows, cols);
}

Tensor ParityTensors::ints(const std::vector<int32_t>& values) {
  Tensor t = zeros(DType::kI32, static_cast<int64_t>(values.size()), 1);
  std::copy(values.begin(), values.end(), t.as<int32_t>());
  return t;
}

Tensor ParityTensors::copyOf(const Tensor& host) {
  Tensor c = zeros(host.dtype, host.rows, host.cols);
  std::memcpy(c.data, host.data, host.bytes());
  return c;
}

Tensor ParityTensors::toDevice(const Tensor& host) {
  auto buf = backend_->allocate(std::max<size_t>(host.bytes(), 1));
  EXPECT_TRUE(buf.ok()) << buf.status();
  backend_->upload((*buf)->data(), host.data, host.bytes());
  device_.push_back(std::move(*buf));
  return Tensor::of(device_.back()->data(), host.dtype, host.rows, host.cols);
}

Tensor ParityTensors::toHost(const Tensor& dev) {
  finish();
  Tensor t = zeros(dev.dtype, dev.rows, dev.cols);
  backend_->download(t.data, dev.data, dev.bytes());
  return t;
}

void ParityTensors::finish() {
  const absl::Status s = finish_();
  EXPECT_TRUE(s.ok()) << s;
}

Tensor ParityTensors::roundedTo(const Tensor& x, DType dtype) {
  Tensor out = copyOf(x);
  roundTo16Bit(out.as<float>(), out.numel(), dtype);
  return out;
}

void ParityTensors::expectNear(const Tensor& got, const Tensor& want, float rel) {
  ASSERT_EQ(got.numel(), want.numel());
  for (int64_t i = 0; i < got.numel(); ++i) {
    const float g = got.as<float>()[i], w = want.as<float>()[i];
    ASSERT_NEAR(g, w, rel * std::max(1.0f, std::fabs(w))) << "element " << i;
  }
}

}  // namespace tandem::kernels
