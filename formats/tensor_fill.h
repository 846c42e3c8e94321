// How the model writers get tensor data without holding a whole model in
// memory: they ask for consecutive runs of elements as floats and convert
// them to the file's dtype.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/dtype.h"

namespace tandem::model {

// fills out[0, count) with elements [first, first + count) (row-major) of
// the tensor with index `tensor` in the order the writer was given them.
// Called from several threads at once (streamTensor): it must be a pure
// function of its arguments.
using TensorFill = std::function<void(size_t tensor, uint64_t first, size_t count, float* out)>;

// the number of elements of a tensor of this shape.
inline uint64_t numelOf(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

// converts `count` floats to `dtype` (f32, f16, bf16, or a quantized type
// with `count` whole blocks) and appends them to `bytes`.
void appendAs(DType dtype, const float* values, size_t count, std::string* bytes);

// writes the data of one tensor of `numel` elements to `out` in chunks,
// asking `fill` for the values; `out` is an open stdio stream. A quantized
// tensor's rows must be whole blocks (chunks are a multiple of 256 values).
// Chunks are filled and converted on up to one thread a core, written in
// order: the file is the same whatever the thread count.
absl::Status streamTensor(std::FILE* out, const std::string& path, size_t tensor, uint64_t numel,
                          DType dtype, const TensorFill& fill);

}  // namespace tandem::model
