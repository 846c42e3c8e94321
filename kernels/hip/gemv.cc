#include "kernels/hip/gemv.h"

#include <algorithm>

#include "kernels/hip/device_utils.h"

namespace tandem::kernels::hip {

namespace {

// --- the vector kernel: k % 8 == 0, 16-byte aligned rows ---
//
// A block of four waves owns R consecutive weight rows; the waves split k
// between them (wave w takes the 8-value chunks w * wave + lane, then 4 *
// wave further on, so the four read 2 KiB of a row side by side), each lane
// reading eight weights of each row with one 16-byte load and using them for
// every row of x. Rows per block grow with the rows of x (R up to 8: x's F32
// loads, through L1, stay within twice the weights' bytes) and shrink while
// the grid would leave multiprocessors idle (k/v projections of 1024 rows).
// The waves' partial sums meet in LDS and are added in a fixed order.
constexpr int kVecWaves = 4;

// eight consecutive weights as floats.
__device__ __forceinline__ void load8(const float* p, float* out) {
  const gpu::F32x4 a = *reinterpret_cast<const gpu::F32x4*>(p);
  const gpu::F32x4 b = *reinterpret_cast<const gpu::F32x4*>(p + 4);
  out[0] = a.x, out[1] = a.y, out[2] = a.z, out[3] = a.w;
  out[4] = b.x, out[5] = b.y, out[6] = b.z, out[7] = b.w;
}
__device__ __forceinline__ void load8(const gpu::F16* p, float* out) {
  const gpu::U32x4 v = *reinterpret_cast<const gpu::U32x4*>(p);
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
  for (int i = 0; i < 4; ++i) {
    out[2 * i] = gpu::halfBitsToFloat(static_cast<uint16_t>(w[i] & 0xffffu));
    out[2 * i + 1] = gpu::halfBitsToFloat(static_cast<uint16_t>(w[i] >> 16));
  }
}
__device__ __forceinline__ void load8(const gpu::BF16* p, float* out) {
  const gpu::U32x4 v = *reinterpret_cast<const gpu::U32x4*>(p);
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
  for (int i = 0; i < 4; ++i) {
    out[2 * i] = gpu::bf16BitsToFloat(static_cast<uint16_t>(w[i] & 0xffffu));
    out[2 * i + 1] = gpu::bf16BitsToFloat(static_cast<uint16_t>(w[i] >> 16));
  }
}

template <class W, int M, int R>
static __global__ void gemvVecKernel(const float* x, GemvOutputs outs, int64_t k) {
  TANDEM_SHARED(float, partial, [kVecWaves][kGemvMaxRows * 8]);
  const int lane = threadIdx.x % warpSize, wave = threadIdx.x / warpSize;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * R, total = outs.rows();
  const W* rows[R];
  for (int r = 0; r < R; ++r) {
    const int64_t row = row0 + r < total ? row0 + r : row0;
    const int s = outs.find(row);
    rows[r] = static_cast<const W*>(outs.w[s]) + (row - outs.begin(s)) * k;
  }
  float acc[M][R];
  for (int i = 0; i < M; ++i) {
    for (int r = 0; r < R; ++r) acc[i][r] = 0.0f;
  }
  const int64_t step = static_cast<int64_t>(warpSize) * kVecWaves * 8;
  TANDEM_UNROLL(2)
  for (int64_t j = (static_cast<int64_t>(wave) * warpSize + lane) * 8; j < k; j += step) {
    float wv[R][8];
    for (int r = 0; r < R; ++r) load8(rows[r] + j, wv[r]);
    for (int i = 0; i < M; ++i) {
      float xv[8];
      load8(x + i * k + j, xv);
      for (int r = 0; r < R; ++r) {
        for (int e = 0; e < 8; ++e) acc[i][r] += xv[e] * wv[r][e];
      }
    }
  }
  for (int i = 0; i < M; ++i) {
    for (int r = 0; r < R; ++r) {
      const float total_r = gpu::warpSum(acc[i][r]);
      if (lane == 0) partial[wave][i * R + r] = total_r;
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
    for (int v = 0; v < kVecWaves; ++v) sum += partial[v][e];
    outs.y[s][i * n + local] = sum + (outs.bias[s] != nullptr ? outs.bias[s][local] : 0.0f);
  }
}

// weight rows a block takes for M rows of x: the power of two >= M up to 8,
// halved while the grid would have fewer than 4 blocks a multiprocessor.
int rowsPerBlock(int m, int64_t n) {
  int r = 1;
  while (r < m && r < 8) r *= 2;
  const int64_t enough = 4 * static_cast<int64_t>(gpu::hostMultiprocessors());
  while (r > 1 && (n + r - 1) / r < enough) r /= 2;
  return r;
}

template <class W, int M, int R>
hipError_t launchVecRows(const float* x, const GemvOutputs& outs, int64_t k, hipStream_t stream) {
  const dim3 grid(static_cast<unsigned>((outs.rows() + R - 1) / R));
  return gpu::launch("gemv_vec", gemvVecKernel<W, M, R>, grid,
                     dim3(static_cast<unsigned>(kVecWaves * gpu::hostWarpSize())), stream, x, outs,
                     k);
}

template <class W, int M>
hipError_t launchVec(const float* x, const GemvOutputs& outs, int64_t k, hipStream_t stream) {
  // only the R that rowsPerBlock can pick for this M are instantiated
  const int r = rowsPerBlock(M, outs.rows());
  if constexpr (M > 4) {
    if (r == 8) return launchVecRows<W, M, 8>(x, outs, k, stream);
  }
  if constexpr (M > 2) {
    if (r == 4) return launchVecRows<W, M, 4>(x, outs, k, stream);
  }
  if constexpr (M > 1) {
    if (r == 2) return launchVecRows<W, M, 2>(x, outs, k, stream);
  }
  return launchVecRows<W, M, 1>(x, outs, k, stream);
}

template <class W>
hipError_t dispatchVec(const float* x, const GemvOutputs& outs, int64_t m, int64_t k,
                       hipStream_t stream) {
  static_assert(kGemvMaxRows == 8);
  switch (m) {
    case 1: return launchVec<W, 1>(x, outs, k, stream);
    case 2: return launchVec<W, 2>(x, outs, k, stream);
    case 3: return launchVec<W, 3>(x, outs, k, stream);
    case 4: return launchVec<W, 4>(x, outs, k, stream);
    case 5: return launchVec<W, 5>(x, outs, k, stream);
    case 6: return launchVec<W, 6>(x, outs, k, stream);
    case 7: return launchVec<W, 7>(x, outs, k, stream);
    default: return launchVec<W, 8>(x, outs, k, stream);
  }
}

// --- the general kernel: any k and alignment ---
//
// lane group g of block b (groups of `lanes` threads) computes column
// n = b * (threads / lanes) + g for every row of x, one element at a time.
constexpr int kThreads = 256;

template <class W>
static __global__ void gemvKernel(const float* x, const W* w, const float* bias, float* y, int m,
                                  int64_t n, int64_t k, int lanes) {
  const int sub = threadIdx.x % lanes;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * (blockDim.x / lanes) + threadIdx.x / lanes;
  // the whole group leaves together: its shuffles stay among live lanes
  if (col >= n) return;
  float acc[kGemvMaxRows];
  for (int r = 0; r < kGemvMaxRows; ++r) acc[r] = 0.0f;
  const W* wr = w + col * k;
  for (int64_t j = sub; j < k; j += lanes) {
    const float wv = gpu::toFloat(wr[j]);
    for (int r = 0; r < m; ++r) acc[r] += x[r * k + j] * wv;
  }
  for (int r = 0; r < m; ++r) {
    const float total = gpu::groupSum(acc[r], lanes);
    if (sub == 0) y[r * n + col] = total + (bias != nullptr ? bias[col] : 0.0f);
  }
}

// lanes per column: about 16 elements of k each, a power of two from 4 to
// the wave size.
int lanesFor(int64_t k) {
  const int wave = gpu::hostWarpSize();
  int lanes = 4;
  while (lanes < wave && lanes * 16 < k) lanes *= 2;
  return lanes;
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

hipError_t launchGemvOutputs(const float* x, std::span<const GemvOutput> outputs, DType w_dtype,
                            int64_t m, int64_t k, hipStream_t stream) {
  if (m < 1 || m > kGemvMaxRows) return hipErrorInvalidValue;
  bool aligned = k % 8 == 0 && aligned16(x);
  for (const GemvOutput& o : outputs) aligned = aligned && aligned16(o.w);
  return TANDEM_DISPATCH_ELEM(w_dtype, W, [&]() -> hipError_t {
    if (aligned) {
      for (size_t first = 0; first < outputs.size(); first += kGemvMaxOutputs) {
        const int count = static_cast<int>(std::min<size_t>(kGemvMaxOutputs, outputs.size() - first));
        const GemvOutputs outs = gemvOutputs(outputs.data() + first, count);
        if (outs.rows() == 0) continue;
        if (const hipError_t e = dispatchVec<W>(x, outs, m, k, stream); e != hipSuccess) return e;
      }
      return hipSuccess;
    }
    // the general kernel, an output at a time
    const int lanes = lanesFor(k);
    const int64_t cols_per_block = kThreads / lanes;
    for (const GemvOutput& o : outputs) {
      if (o.n == 0) continue;
      const dim3 grid(static_cast<unsigned>((o.n + cols_per_block - 1) / cols_per_block));
      const hipError_t e = gpu::launch("gemv", gemvKernel<W>, grid, dim3(kThreads), stream, x,
                                       static_cast<const W*>(o.w), o.bias, o.y,
                                       static_cast<int>(m), o.n, k, lanes);
      if (e != hipSuccess) return e;
    }
    return hipSuccess;
  });
}

hipError_t launchGemv(const float* x, const void* w, DType w_dtype, const float* bias, float* y,
                      int64_t m, int64_t n, int64_t k, hipStream_t stream) {
  const GemvOutput out{w, bias, y, n};
  return launchGemvOutputs(x, std::span<const GemvOutput>(&out, 1), w_dtype, m, k, stream);
}

}  // namespace tandem::kernels::hip
