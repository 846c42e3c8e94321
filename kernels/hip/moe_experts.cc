#include "kernels/hip/moe_experts.h"

#include "kernels/hip/device_utils.h"

namespace tandem::kernels::hip {

namespace {

// four waves split k; R weight rows a block, kRows rows of x at a time
constexpr int kWaves = 4;
constexpr int kR = 4;
constexpr int kRows = 4;

// the rows of x (or of acts) of positions [p, p + m)
__device__ __forceinline__ int64_t rowOf(const int32_t* x_rows, int32_t p) {
  return x_rows != nullptr ? x_rows[p] : p;
}

// the block's sums of acc (kRows x kR, one per lane) into y: each wave's
// total through LDS, added in wave order.
template <class Partial>
__device__ __forceinline__ void storeRows(float (&acc)[kRows][kR], Partial& partial, int m, int32_t p,
                                         int64_t row0, int64_t n, float* y) {
  const int lane = threadIdx.x % warpSize, wave = threadIdx.x / warpSize;
  for (int i = 0; i < kRows; ++i) {
    for (int r = 0; r < kR; ++r) {
      const float total = gpu::warpSum(acc[i][r]);
      if (lane == 0) partial[wave][i * kR + r] = total;
    }
  }
  __syncthreads();
  for (int e = threadIdx.x; e < kRows * kR; e += blockDim.x) {
    const int i = e / kR, r = e % kR;
    if (i >= m || row0 + r >= n) continue;
    float total = 0.0f;
    for (int v = 0; v < kWaves; ++v) total += partial[v][e];
    y[(p + i) * n + row0 + r] = total;
  }
  __syncthreads();
}

template <class W>
static __global__ void moeMatmulKernel(const float* x, const int32_t* x_rows, const W* w,
                                       MoeGroups g, float* y, int64_t n, int64_t k) {
  TANDEM_SHARED(float, partial, [kWaves][kRows * kR]);
  const int expert = g.active[blockIdx.x];
  if (expert < 0) return;  // the whole block: no expert took this slot
  const int lane = threadIdx.x % warpSize, wave = threadIdx.x / warpSize;
  const int64_t row0 = static_cast<int64_t>(blockIdx.y) * kR;
  const W* rows[kR];
  for (int r = 0; r < kR; ++r) rows[r] = w + (static_cast<int64_t>(expert) * n + (row0 + r < n ? row0 + r : row0)) * k;
  const int64_t step = static_cast<int64_t>(warpSize) * kWaves;
  for (int32_t p = g.offsets[expert]; p < g.offsets[expert + 1]; p += kRows) {
    const int m = g.offsets[expert + 1] - p < kRows ? g.offsets[expert + 1] - p : kRows;
    const float* xr[kRows];
    for (int i = 0; i < kRows; ++i) xr[i] = x + rowOf(x_rows, p + (i < m ? i : 0)) * k;
    float acc[kRows][kR];
    for (int i = 0; i < kRows; ++i) {
      for (int r = 0; r < kR; ++r) acc[i][r] = 0.0f;
    }
    for (int64_t j = static_cast<int64_t>(wave) * warpSize + lane; j < k; j += step) {
      float wv[kR];
      for (int r = 0; r < kR; ++r) wv[r] = gpu::toFloat(rows[r][j]);
      for (int i = 0; i < kRows; ++i) {
        const float xv = xr[i][j];
        for (int r = 0; r < kR; ++r) acc[i][r] += xv * wv[r];
      }
    }
    storeRows(acc, partial, m, p, row0, n, y);
  }
}

template <class Q>
static __global__ void moeMatmulQuantKernel(const gpu::ActQ8* acts, const int32_t* x_rows,
                                            const typename Q::Block* w, MoeGroups g, float* y,
                                            int64_t n, int64_t k) {
  TANDEM_SHARED(float, partial, [kWaves][kRows * kR]);
  const int expert = g.active[blockIdx.x];
  if (expert < 0) return;
  const int lane = threadIdx.x % warpSize, wave = threadIdx.x / warpSize;
  const int64_t row0 = static_cast<int64_t>(blockIdx.y) * kR;
  const int64_t blocks_per_row = k / Q::kValues, acts_per_row = k / gpu::kActValues;
  const int64_t units = k / Q::kUnitValues;
  const typename Q::Block* rows[kR];
  for (int r = 0; r < kR; ++r) {
    rows[r] = w + (static_cast<int64_t>(expert) * n + (row0 + r < n ? row0 + r : row0)) * blocks_per_row;
  }
  const int64_t step = static_cast<int64_t>(warpSize) * kWaves;
  for (int32_t p = g.offsets[expert]; p < g.offsets[expert + 1]; p += kRows) {
    const int m = g.offsets[expert + 1] - p < kRows ? g.offsets[expert + 1] - p : kRows;
    const gpu::ActQ8* ar[kRows];
    for (int i = 0; i < kRows; ++i) ar[i] = acts + rowOf(x_rows, p + (i < m ? i : 0)) * acts_per_row;
    float acc[kRows][kR];
    for (int i = 0; i < kRows; ++i) {
      for (int r = 0; r < kR; ++r) acc[i][r] = 0.0f;
    }
    for (int64_t u = static_cast<int64_t>(wave) * warpSize + lane; u < units; u += step) {
      typename Q::Unit wu[kR];
      for (int r = 0; r < kR; ++r) Q::load(rows[r], u, wu[r]);
      for (int i = 0; i < kRows; ++i) {
        for (int r = 0; r < kR; ++r) acc[i][r] += Q::dot(wu[r], ar[i], u);
      }
    }
    storeRows(acc, partial, m, p, row0, n, y);
  }
}

constexpr int kCombineThreads = 256;

static __global__ void moeCombineKernel(const float* down, const int32_t* position,
                                        const float* weights, int k, int64_t h, float* out) {
  const int64_t t = blockIdx.x;
  const int64_t i = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  if (i >= h) return;
  float acc = 0.0f;
  for (int j = 0; j < k; ++j) {
    const int32_t p = position[t * k + j];
    const float term = p >= 0 ? down[p * h + i] * weights[t * k + j] : 0.0f;
    acc = j == 0 ? term : acc + term;
  }
  out[t * h + i] = acc;
}

dim3 grid(int slots, int64_t n) {
  return dim3(static_cast<unsigned>(slots), static_cast<unsigned>((n + kR - 1) / kR));
}

dim3 block() { return dim3(static_cast<unsigned>(kWaves * gpu::hostWarpSize())); }

}  // namespace

hipError_t launchMoeMatmul(const float* x, const int32_t* x_rows, const void* w, DType w_dtype,
                           MoeGroups groups, int slots, float* y, int64_t n, int64_t k,
                           hipStream_t stream) {
  if (slots <= 0 || n == 0) return hipSuccess;
  return TANDEM_DISPATCH_ELEM(w_dtype, W, [&] {
    return gpu::launch("moe_matmul", moeMatmulKernel<W>, grid(slots, n), block(), stream, x, x_rows,
                       static_cast<const W*>(w), groups, y, n, k);
  });
}

hipError_t launchMoeMatmulQuant(const gpu::ActQ8* acts, const int32_t* x_rows, const void* w,
                                DType w_dtype, MoeGroups groups, int slots, float* y, int64_t n,
                                int64_t k, hipStream_t stream) {
  if (reinterpret_cast<uintptr_t>(w) % 4 != 0) return hipErrorInvalidValue;
  return TANDEM_DISPATCH_QUANT_DOT(w_dtype, Q, [&]() -> hipError_t {
    if (k % Q::kValues != 0) return hipErrorInvalidValue;
    if (slots <= 0 || n == 0) return hipSuccess;
    return gpu::launch("moe_matmul_quant", moeMatmulQuantKernel<Q>, grid(slots, n), block(), stream,
                       acts, x_rows, static_cast<const typename Q::Block*>(w), groups, y, n, k);
  });
}

hipError_t launchMoeCombine(const float* down, const int32_t* position, const float* weights,
                            int64_t rows, int k, int64_t h, float* out, hipStream_t stream) {
  if (rows == 0 || h == 0) return hipSuccess;
  const dim3 g(static_cast<unsigned>(rows), static_cast<unsigned>((h + kCombineThreads - 1) / kCombineThreads));
  return gpu::launch("moe_combine", moeCombineKernel, g, dim3(kCombineThreads), stream, down, position,
                     weights, k, h, out);
}

}  // namespace tandem::kernels::hip
