// The values every backend op takes: device buffers and tensor descriptors.
//
// A Buffer is one allocation owned by the backend that made it; its data() is
// a device address (a host address for the cpu and reference backends) and
// may only be dereferenced by that backend's ops, or through upload/download.
// A Tensor describes a dense row-major 2-D view into such memory; it owns
// nothing. Ops that need more dimensions say how they read the columns
// (e.g. q as [tokens, num_heads * head_dim]).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "common/dtype.h"

namespace tandem::kernels {

class Buffer {
 public:
  virtual ~Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  // device address of the first byte; stable for the buffer's lifetime.
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 protected:
  Buffer(void* data, size_t bytes) : data_(data), bytes_(bytes) {}
  void* data_;
  size_t bytes_;
};
using BufferPtr = std::unique_ptr<Buffer>;

struct Tensor {
  void* data = nullptr;  // device address of element [0, 0]
  DType dtype = DType::kF32;
  int64_t rows = 0;
  int64_t cols = 0;

  static Tensor of(const void* data, DType dtype, int64_t rows, int64_t cols) {
    return Tensor{const_cast<void*>(data), dtype, rows, cols};
  }
  static Tensor of(const Buffer& buf, DType dtype, int64_t rows, int64_t cols) {
    return of(buf.data(), dtype, rows, cols);
  }

  int64_t numel() const { return rows * cols; }
  // block-aware: a quantized row of `cols` values is whole blocks.
  size_t rowBytes() const { return tandem::rowBytes(dtype, static_cast<size_t>(cols)); }
  size_t bytes() const { return rowBytes() * static_cast<size_t>(rows); }
  // the same memory seen with another shape of the same element count.
  Tensor reshaped(int64_t new_rows, int64_t new_cols) const {
    return Tensor{data, dtype, new_rows, new_cols};
  }
  // rows [begin, begin + n) of this tensor.
  Tensor rowRange(int64_t begin, int64_t n) const {
    return Tensor{static_cast<char*>(data) + begin * rowBytes(), dtype, n, cols};
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data);
  }
};

}  // namespace tandem::kernels
