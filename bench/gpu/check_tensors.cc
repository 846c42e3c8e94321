#include "bench/gpu/check_tensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/quant_blocks.h"
#include "kernels/reference/operand_rounding.h"

namespace tandem::bench::gpu {

using kernels::Tensor;

namespace {

void store(DType dtype, float v, void* dst) {
  switch (dtype) {
    case DType::kF16: {
      const uint16_t h = f32ToF16(v);
      std::memcpy(dst, &h, 2);
      break;
    }
    case DType::kBF16: {
      const uint16_t h = f32ToBf16(v);
      std::memcpy(dst, &h, 2);
      break;
    }
    default:
      std::memcpy(dst, &v, 4);
  }
}

}  // namespace

Tensor CheckTensors::hostOf(DType dtype, int64_t rows, int64_t cols) {
  Tensor t{nullptr, dtype, rows, cols};
  storage_.emplace_back(std::max<size_t>(t.bytes(), 4), 0);
  t.data = storage_.back().data();
  return t;
}

Tensor CheckTensors::random(DType dtype, int64_t rows, int64_t cols, float scale) {
  Tensor t = hostOf(dtype, rows, cols);
  std::uniform_real_distribution<float> dist(-scale, scale);
  const size_t elem = dtypeSize(dtype);
  for (int64_t i = 0; i < t.numel(); ++i) store(dtype, dist(rng_), t.as<char>() + i * elem);
  return t;
}

Tensor CheckTensors::zeros(DType dtype, int64_t rows, int64_t cols) {
  return hostOf(dtype, rows, cols);
}

Tensor CheckTensors::ints(const std::vector<int32_t>& values) {
  Tensor t = hostOf(DType::kI32, static_cast<int64_t>(values.size()), 1);
  if (!values.empty()) std::memcpy(t.data, values.data(), values.size() * 4);
  return t;
}

Tensor CheckTensors::copyOf(const Tensor& host) {
  Tensor t = hostOf(host.dtype, host.rows, host.cols);
  std::memcpy(t.data, host.data, host.bytes());
  return t;
}

absl::StatusOr<Tensor> CheckTensors::toDevice(const Tensor& host) {
  auto buf = backend_->allocate(std::max<size_t>(host.bytes(), 4));
  if (!buf.ok()) return buf.status();
  backend_->upload((*buf)->data(), host.data, host.bytes());
  Tensor t = Tensor::of(**buf, host.dtype, host.rows, host.cols);
  device_.push_back(std::move(*buf));
  return t;
}

absl::StatusOr<Tensor> CheckTensors::patterned(DType dtype, int64_t rows, int64_t cols) {
  // one 1 MiB host chunk of values, uploaded as often as the tensor needs
  const Tensor shape{nullptr, dtype, rows, cols};
  auto buf = backend_->allocate(shape.bytes());
  if (!buf.ok()) return buf.status();
  std::vector<char> chunk;
  if (quant::isQuantized(dtype)) {
    // random blocks with sane scales, a whole number of them a chunk
    const int64_t blocks = (int64_t{1} << 20) / static_cast<int64_t>(quant::blockBytes(dtype));
    chunk = kernels::randomQuantBlocks(dtype, 1, blocks * quant::blockValues(dtype), rng_);
  } else {
    const size_t elem = dtypeSize(dtype);
    chunk.resize(size_t{1} << 20);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (size_t i = 0; i + elem <= chunk.size(); i += elem) store(dtype, dist(rng_), &chunk[i]);
  }
  char* dst = static_cast<char*>((*buf)->data());
  for (size_t off = 0; off < shape.bytes(); off += chunk.size()) {
    backend_->upload(dst + off, chunk.data(), std::min(chunk.size(), shape.bytes() - off));
  }
  backend_->synchronize();
  Tensor t = Tensor::of(**buf, dtype, rows, cols);
  device_.push_back(std::move(*buf));
  return t;
}

void CheckTensors::releaseDevice() {
  backend_->synchronize();
  device_.clear();
}

Tensor CheckTensors::toHost(const Tensor& dev) {
  backend_->synchronize();
  Tensor t = hostOf(dev.dtype, dev.rows, dev.cols);
  backend_->download(t.data, dev.data, dev.bytes());
  backend_->synchronize();
  return t;
}

double maxRelativeError(const Tensor& got, const Tensor& want) {
  if (got.rows != want.rows || got.cols != want.cols || got.dtype != DType::kF32 ||
      want.dtype != DType::kF32) {
    return std::numeric_limits<double>::infinity();
  }
  double worst = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = got.as<float>()[i], w = want.as<float>()[i];
    if (!std::isfinite(g)) return std::numeric_limits<double>::infinity();
    worst = std::max(worst, std::abs(g - w) / std::max(1.0, std::abs(w)));
  }
  return worst;
}

}  // namespace tandem::bench::gpu
