// Host tensors for the kernels' tests and their copies in a backend's device
// memory. A test fills host tensors (random, zeros, ints), hands the backend
// device copies (toDevice), and reads results back (toHost) after the
// backend has finished; the reference backend works on the host tensors
// directly. For a backend whose device is the host (cpu) the device copies
// are ordinary host buffers, so one test body serves every backend.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "kernels/backend.h"
#include "kernels/tensor.h"

namespace tandem::kernels {

class ParityTensors {
 public:
  // waits for every op issued on the device and returns the first kernel
  // error, if any.
  using Finish = std::function<absl::Status()>;

  // `backend` must outlive this object's device tensors (release them with
  // releaseDevice() first).
  void attach(Backend* backend, Finish finish);
  void releaseDevice() { device_.clear(); }

  // a host tensor of `dtype` filled with uniform values in [-scale, scale].
  Tensor random(DType dtype, int64_t rows, int64_t cols, float scale = 1.0f);
  Tensor zeros(DType dtype, int64_t rows, int64_t cols);
  // an [n, 1] I32 host tensor.
  Tensor ints(const std::vector<int32_t>& values);
  Tensor copyOf(const Tensor& host);

  // the same contents in device memory of the attached backend.
  Tensor toDevice(const Tensor& host);
  // waits for the device (failing the test with the kernel's error) and
  // copies `dev` back into a fresh host tensor.
  Tensor toHost(const Tensor& dev);
  // fails the test with the device's error, if any.
  void finish();

  // every element within rel * max(1, |want|) of the reference (F32).
  static void expectNear(const Tensor& got, const Tensor& want, float rel);
  // an F32 copy of F32 `x` with every value rounded to `dtype` (F16 or
  // BF16, to nearest even) and back: a matrix unit's operand.
  Tensor roundedTo(const Tensor& x, DType dtype);

  std::mt19937& rng() { return rng_; }

 private:
  std::mt19937 rng_{1234};
  Backend* backend_ = nullptr;
  Finish finish_;
  std::vector<std::vector<char>> storage_;
  std::vector<BufferPtr> device_;
};

}  // namespace tandem::kernels
