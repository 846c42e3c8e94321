#include "kernels/hip/gemv_quant.h"

#include "kernels/hip/device_utils.h"

namespace tandem::kernels::hip {

namespace {

constexpr int kThreads = 128;

// a wave owns R consecutive weight rows; lane l takes the units l, l + wave,
// ... of each (loads of neighbouring lanes are neighbouring units), dots each
// with the M rows of quantized activations and the wave sums at the end.
template <class Q, int M, int R>
static __global__ void gemvQuantKernel(const gpu::ActQ8* act, const typename Q::Block* w,
                                       const float* bias, float* y, int64_t n, int64_t k) {
  const int lane = threadIdx.x % warpSize;
  const int64_t row0 =
      (static_cast<int64_t>(blockIdx.x) * (blockDim.x / warpSize) + threadIdx.x / warpSize) * R;
  // the whole wave leaves together: its shuffles stay among live lanes
  if (row0 >= n) return;
  const int64_t blocks_per_row = k / Q::kValues, acts_per_row = k / gpu::kActValues;
  const int64_t units = k / Q::kUnitValues;
  const typename Q::Block* rows[R];
  for (int r = 0; r < R; ++r) rows[r] = w + (row0 + r < n ? row0 + r : row0) * blocks_per_row;
  float acc[M][R];
  for (int i = 0; i < M; ++i) {
    for (int r = 0; r < R; ++r) acc[i][r] = 0.0f;
  }
  TANDEM_UNROLL(2)
  for (int64_t u = lane; u < units; u += warpSize) {
    typename Q::Unit wu[R];
    for (int r = 0; r < R; ++r) Q::load(rows[r], u, wu[r]);
    for (int i = 0; i < M; ++i) {
      for (int r = 0; r < R; ++r) acc[i][r] += Q::dot(wu[r], act + i * acts_per_row, u);
    }
  }
  for (int i = 0; i < M; ++i) {
    for (int r = 0; r < R; ++r) {
      const float total = gpu::warpSum(acc[i][r]);
      if (lane == 0 && row0 + r < n) {
        y[i * n + row0 + r] = total + (bias != nullptr ? bias[row0 + r] : 0.0f);
      }
    }
  }
}

// weight rows a wave takes for M rows of x: the activations' int8 bytes
// read per weight byte stay about 2 or below.
constexpr int rowsPerWave(int m) { return m <= 2 ? 1 : m <= 4 ? 2 : 4; }

template <class Q, int M>
hipError_t launchRows(const gpu::ActQ8* act, const typename Q::Block* w, const float* bias,
                      float* y, int64_t n, int64_t k, hipStream_t stream) {
  constexpr int kR = rowsPerWave(M);
  const int64_t rows_per_block = static_cast<int64_t>(kThreads / gpu::hostWarpSize()) * kR;
  const dim3 grid(static_cast<unsigned>((n + rows_per_block - 1) / rows_per_block));
  return gpu::launch("gemv_quant", gemvQuantKernel<Q, M, kR>, grid, dim3(kThreads), stream, act, w,
                     bias, y, n, k);
}

}  // namespace

size_t gemvQuantWorkspace(int64_t m, int64_t k) {
  return static_cast<size_t>(m * (k / gpu::kActValues)) * sizeof(gpu::ActQ8);
}

hipError_t launchGemvQuant(const gpu::ActQ8* act, const void* w, DType w_dtype, const float* bias,
                           float* y, int64_t m, int64_t n, int64_t k, hipStream_t stream) {
  if (m < 1 || m > kGemvMaxRows || reinterpret_cast<uintptr_t>(w) % 4 != 0) {
    return hipErrorInvalidValue;
  }
  return TANDEM_DISPATCH_QUANT_DOT(w_dtype, Q, [&]() -> hipError_t {
    if (k % Q::kValues != 0) return hipErrorInvalidValue;
    if (n == 0) return hipSuccess;
    const auto* wb = static_cast<const typename Q::Block*>(w);
    static_assert(kGemvMaxRows == 8);
    switch (m) {
      case 1: return launchRows<Q, 1>(act, wb, bias, y, n, k, stream);
      case 2: return launchRows<Q, 2>(act, wb, bias, y, n, k, stream);
      case 3: return launchRows<Q, 3>(act, wb, bias, y, n, k, stream);
      case 4: return launchRows<Q, 4>(act, wb, bias, y, n, k, stream);
      case 5: return launchRows<Q, 5>(act, wb, bias, y, n, k, stream);
      case 6: return launchRows<Q, 6>(act, wb, bias, y, n, k, stream);
      case 7: return launchRows<Q, 7>(act, wb, bias, y, n, k, stream);
      default: return launchRows<Q, 8>(act, wb, bias, y, n, k, stream);
    }
  });
}

}  // namespace tandem::kernels::hip
