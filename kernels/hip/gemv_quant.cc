#include "kernels/hip/gemv_quant.h"

#include <algorithm>

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
static __global__ void gemvQuantKernel(const gpu::ActQ8* act, GemvOutputs outs, int64_t k) {
  TANDEM_SHARED(float, partial, [kWaves][kGemvMaxRows * 4]);
  using Block = typename Q::Block;
  const int lane = threadIdx.x % warpSize, wave = threadIdx.x / warpSize;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * R, total = outs.rows();
  const int64_t blocks_per_row = k / Q::kValues, acts_per_row = k / gpu::kActValues;
  const int64_t units = k / Q::kUnitValues;
  const Block* rows[R];
  for (int r = 0; r < R; ++r) {
    const int64_t row = row0 + r < total ? row0 + r : row0;
    const int s = outs.find(row);
    rows[r] = static_cast<const Block*>(outs.w[s]) + (row - outs.begin(s)) * blocks_per_row;
  }
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
      const float sum = gpu::warpSum(acc[i][r]);
      if (lane == 0) partial[wave][i * R + r] = sum;
    }
  }
  __syncthreads();
  for (int e = threadIdx.x; e < M * R; e += blockDim.x) {
    const int i = e / R, r = e % R;
    const int64_t row = row0 + r;
    if (row >= total) continue;
    const int s = outs.find(row);
    const int64_t local = row - outs.begin(s), n = outs.end[s] - outs.begin(s);
    float sum = 0.0f;
    for (int v = 0; v < kWaves; ++v) sum += partial[v][e];
    outs.y[s][i * n + local] = sum + (outs.bias[s] != nullptr ? outs.bias[s][local] : 0.0f);
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
hipError_t launchQuantRows(const gpu::ActQ8* act, const GemvOutputs& outs, int64_t k,
                           hipStream_t stream) {
  const dim3 grid(static_cast<unsigned>((outs.rows() + R - 1) / R));
  return gpu::launch("gemv_quant", gemvQuantKernel<Q, M, R>, grid,
                     dim3(static_cast<unsigned>(kWaves * gpu::hostWarpSize())), stream, act, outs,
                     k);
}

template <class Q, int M>
hipError_t launchRows(const gpu::ActQ8* act, const GemvOutputs& outs, int64_t k,
                      hipStream_t stream) {
  // only the R that rowsPerBlock can pick for this M are instantiated
  const int r = rowsPerBlock(M, outs.rows());
  if constexpr (M > 2) {
    if (r == 4) return launchQuantRows<Q, M, 4>(act, outs, k, stream);
  }
  if constexpr (M > 1) {
    if (r == 2) return launchQuantRows<Q, M, 2>(act, outs, k, stream);
  }
  return launchQuantRows<Q, M, 1>(act, outs, k, stream);
}

template <class Q>
hipError_t dispatchRows(const gpu::ActQ8* act, const GemvOutputs& outs, int64_t m, int64_t k,
                        hipStream_t stream) {
  static_assert(kGemvMaxRows == 8);
  switch (m) {
    case 1: return launchRows<Q, 1>(act, outs, k, stream);
    case 2: return launchRows<Q, 2>(act, outs, k, stream);
    case 3: return launchRows<Q, 3>(act, outs, k, stream);
    case 4: return launchRows<Q, 4>(act, outs, k, stream);
    case 5: return launchRows<Q, 5>(act, outs, k, stream);
    case 6: return launchRows<Q, 6>(act, outs, k, stream);
    case 7: return launchRows<Q, 7>(act, outs, k, stream);
    default: return launchRows<Q, 8>(act, outs, k, stream);
  }
}

}  // namespace

size_t gemvQuantWorkspace(int64_t m, int64_t k) {
  return static_cast<size_t>(m * (k / gpu::kActValues)) * sizeof(gpu::ActQ8);
}

hipError_t launchGemvQuantOutputs(const gpu::ActQ8* act, std::span<const GemvOutput> outputs,
                                  DType w_dtype, int64_t m, int64_t k, hipStream_t stream) {
  if (m < 1 || m > kGemvMaxRows) return hipErrorInvalidValue;
  for (const GemvOutput& o : outputs) {
    if (reinterpret_cast<uintptr_t>(o.w) % 4 != 0) return hipErrorInvalidValue;
  }
  return TANDEM_DISPATCH_QUANT_DOT(w_dtype, Q, [&]() -> hipError_t {
    if (k % Q::kValues != 0) return hipErrorInvalidValue;
    for (size_t first = 0; first < outputs.size(); first += kGemvMaxOutputs) {
      const int count = static_cast<int>(std::min<size_t>(kGemvMaxOutputs, outputs.size() - first));
      const GemvOutputs outs = gemvOutputs(outputs.data() + first, count);
      if (outs.rows() == 0) continue;
      if (const hipError_t e = dispatchRows<Q>(act, outs, m, k, stream); e != hipSuccess) return e;
    }
    return hipSuccess;
  });
}

hipError_t launchGemvQuant(const gpu::ActQ8* act, const void* w, DType w_dtype, const float* bias,
                           float* y, int64_t m, int64_t n, int64_t k, hipStream_t stream) {
  const GemvOutput out{w, bias, y, n};
  return launchGemvQuantOutputs(act, std::span<const GemvOutput>(&out, 1), w_dtype, m, k, stream);
}

}  // namespace tandem::kernels::hip
