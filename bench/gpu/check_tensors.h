// Host tensors and their device copies for the GPU check (bench/gpu): the
// parity checks fill host tensors, hand the backend device copies and read
// results back; the benchmarks only need device tensors filled once. No
// test framework: a mismatch is a value, reported by the caller.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/backend.h"
#include "kernels/tensor.h"

namespace tandem::bench::gpu {

class CheckTensors {
 public:
  // `backend` must outlive this object.
  explicit CheckTensors(kernels::Backend* backend) : backend_(backend) {}

  // host tensors: uniform values in [-scale, scale] (converted to `dtype`),
  // zeros, an [n, 1] I32 tensor, a copy.
  kernels::Tensor random(DType dtype, int64_t rows, int64_t cols, float scale = 1.0f);
  kernels::Tensor zeros(DType dtype, int64_t rows, int64_t cols);
  kernels::Tensor ints(const std::vector<int32_t>& values);
  kernels::Tensor copyOf(const kernels::Tensor& host);

  // a device copy of `host` (the backend's allocate + upload).
  absl::StatusOr<kernels::Tensor> toDevice(const kernels::Tensor& host);
  // device memory of `rows` x `cols` filled with a cheap repeating pattern
  // of values in [-1, 1] (for benchmark weights of hundreds of MB); for a
  // quantized dtype, random blocks with sane scales.
  absl::StatusOr<kernels::Tensor> patterned(DType dtype, int64_t rows, int64_t cols);
  // waits for the backend, then copies `dev` into a fresh host tensor.
  kernels::Tensor toHost(const kernels::Tensor& dev);
  // frees every device tensor made so far (they must no longer be used):
  // benchmarks of hundreds of MB a shape free them between shapes.
  void releaseDevice();

  std::mt19937& rng() { return rng_; }

 private:
  kernels::Tensor hostOf(DType dtype, int64_t rows, int64_t cols);

  kernels::Backend* backend_;
  std::mt19937 rng_{1234};
  std::vector<std::vector<char>> storage_;
  std::vector<kernels::BufferPtr> device_;
};

// the largest |got - want| / max(1, |want|) over F32 tensors of one shape
// (infinite when the shapes differ or a value is not finite).
double maxRelativeError(const kernels::Tensor& got, const kernels::Tensor& want);

}  // namespace tandem::bench::gpu
