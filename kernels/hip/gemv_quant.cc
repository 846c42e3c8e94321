#include "kernels/hip/gemv_quant.h"

#include "kernels/hip/device_utils.h"

namespace tandem::kernels::hip {

namespace {

// A block of four waves owns R consecutive weight rows; its lanes take a
// row's 32-value units side by side (unit (wave * wave_size + lane) + 4 *
// wave_size * i), each loaded once and dotted with every row of x's 8-bit
// blocks; the waves' partial sums meet in LDS and are added in a fixed order.
// With k = 4096 a row is 128 units: every lane of the block has one, and a
// device runs thousands of blocks, so many loads are in flight per row.
constexpr int kWaves = 4;

template <class Q, int M, int R>
static __global__ void gemvQuantKernel(const gpu::ActQ8* act, const typename Q::Block* w,
                                       const float* bias, float* y, int64_t n, int64_t k) {
  TANDEM_SHARED(float, partial, [kWaves][kGemvMaxRows * 4]);
  const int lane = threadIdx.x % warpSize, wave = threadIdx.x / warpSize;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * R;
  const int64_t blocks_per_row = k / Q::kValues, acts_per_row = k / gpu::kActValues;
  const int64_t units = k / Q::kUnitValues;
  const typename Q::Block* rows[R];
  for (int r = 0; r < R; ++r) rows[r] = w + (row0 + r < n ? row0 + r : row0) * blocks_per_row;
  float acc[M][R];
  for (int i = 0; i < M; ++i) {
    for (int r = 0; r < R; ++r) acc[i][r] = 0.0f;
  }
  const int64_t step = static_cast<int64_t>(warpSize) * kWaves;
  TANDEM_UNROLL(2)
  for (int64_t u = static_cast<int64_t>(wave) * warpSize + lane; u < units; u += step) {
    typename Q::Unit wu[R];
    for (int r = 0; r < R; ++r) Q::load(rows[r], u, wu[r]);
    for (int i = 0; i < M; ++i) {
      for (int r = 0; r < R; ++r) acc[i][r] += Q::dot(wu[r], act + i * acts_per_row, u);
    }
  }
  for (int i = 0; i < M; ++i) {
    for (int r = 0; r < R; ++r) {
      const float total = gpu::warpSum(acc[i][r]);
      if (lane == 0) partial[wave][i * R + r] = total;
    }
  }
  __syncthreads();
  for (int e = threadIdx.x; e < M * R; e += blockDim.x) {
    const int i = e / R, r = e % R;
    if (row0 + r >= n) continue;
    float total = 0.0f;
    for (int v = 0; v < kWaves; ++v) total += partial[v][e];
    y[i * n + row0 + r] = total + (bias != nullptr ? bias[row0 + r] : 0.0f);
  }
}

// weight rows a block takes for M rows of x: the power of two >= M up to 4
// (x's int8 bytes read per weight byte stay about 2 or below), halved while
// the grid would have fewer than 4 blocks a multiprocessor.
int rowsPerBlock(int m, int64_t n) {
  int r = 1;
  while (r < m && r < 4) r *= 2;
  const int64_t enough = 4 * static_cast<int64_t>(gpu::hostMultiprocessors());
  while (r > 1 && (n + r - 1) / r < enough) r /= 2;
  return r;
}

template <class Q, int M, int R>
hipError_t launchQuantRows(const gpu::ActQ8* act, const typename Q::Block* w, const float* bias,
                           float* y, int64_t n, int64_t k, hipStream_t stream) {
  const dim3 grid(static_cast<unsigned>((n + R - 1) / R));
  return gpu::launch("gemv_quant", gemvQuantKernel<Q, M, R>, grid,
                     dim3(static_cast<unsigned>(kWaves * gpu::hostWarpSize())), stream, act, w,
                     bias, y, n, k);
}

template <class Q, int M>
hipError_t launchRows(const gpu::ActQ8* act, const typename Q::Block* w, const float* bias,
                      float* y, int64_t n, int64_t k, hipStream_t stream) {
  // only the R that rowsPerBlock can pick for this M are instantiated
  const int r = rowsPerBlock(M, n);
  if constexpr (M > 2) {
    if (r == 4) return launchQuantRows<Q, M, 4>(act, w, bias, y, n, k, stream);
  }
  if constexpr (M > 1) {
    if (r == 2) return launchQuantRows<Q, M, 2>(act, w, bias, y, n, k, stream);
  }
  return launchQuantRows<Q, M, 1>(act, w, bias, y, n, k, stream);
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
