// The outputs one GEMV launch computes: up to kGemvMaxOutputs weights of one
// type and width that share x (a layer's q, k and v; its gate and up), their
// rows numbered one after another, so a decode step launches once where it
// used to launch per weight (HipBackend::matmuls).
#pragma once

#include <cstdint>

#include "kernels/hip/gpu_vendor.h"

namespace tandem::kernels::hip {

inline constexpr int kGemvMaxOutputs = 4;

// one weight of a launch: w [n, k], bias [n] F32 or null, y [m, n] F32.
struct GemvOutput {
  const void* w = nullptr;
  const float* bias = nullptr;
  float* y = nullptr;
  int64_t n = 0;
};

// the outputs as a kernel parameter: row r of the launch is row
// r - begin(s) of output s = find(r).
struct GemvOutputs {
  const void* w[kGemvMaxOutputs] = {};
  const float* bias[kGemvMaxOutputs] = {};
  float* y[kGemvMaxOutputs] = {};
  int64_t end[kGemvMaxOutputs] = {};  // rows of outputs 0 .. s together
  int count = 0;

  __host__ __device__ int64_t rows() const { return count > 0 ? end[count - 1] : 0; }
  __host__ __device__ int64_t begin(int s) const { return s == 0 ? 0 : end[s - 1]; }
  __host__ __device__ int find(int64_t row) const {
    int s = 0;
    while (s + 1 < count && row >= end[s]) ++s;
    return s;
  }
};

// up to kGemvMaxOutputs of `outputs` from `first` as a kernel parameter.
inline GemvOutputs gemvOutputs(const GemvOutput* outputs, int count) {
  GemvOutputs o;
  int64_t rows = 0;
  for (int s = 0; s < count && s < kGemvMaxOutputs; ++s) {
    o.w[s] = outputs[s].w;
    o.bias[s] = outputs[s].bias;
    o.y[s] = outputs[s].y;
    rows += outputs[s].n;
    o.end[s] = rows;
    o.count = s + 1;
  }
  return o;
}

}  // namespace tandem::kernels::hip
