#include "kernels/hip/gemv.h"

#include "kernels/hip/device_utils.h"

namespace tandem::kernels::hip {

namespace {

// --- the vector kernel: k % 8 == 0, 16-byte aligned rows ---
//
// A wave owns R consecutive weight rows and reads each eight values at a time
// (one 16-byte load for F16/BF16), lane l taking the chunks l, l + wave, ...
// of k, so a wave's loads are 512 (or 1024) consecutive bytes of a row. The
// M rows of x are read as two 16-byte loads a chunk and used for all R
// weight rows: R grows with M so that x's traffic (through L1) stays within
// twice the weights'. Bandwidth: with 128-thread blocks a device keeps
// thousands of waves resident, each with TANDEM_UNROLL'd loads in flight,
// which covers HBM latency (bench/gpu: gemv rows of `tandem_gpu_check bench`).
constexpr int kVecThreads = 128;

// eight consecutive weights as floats.
__device__ __forceinline__ void load8(const float* p, float* out) {
  const gpu::F32x4 a = *reinterpret_cast<const gpu::F32x4*>(p);
  const gpu::F32x4 b = *reinterpret_cast<const gpu::F32x4*>(p + 4);
  out[0] = a.x, out[1] = a.y, out[2] = a.z, out[3] = a.w;
  out[4] = b.x, out[5] = b.y, out[6] = b.z, out[7] = b.w;
}
__device__ __forceinline__ void unpackHalves(const gpu::U32x4 v, float* out) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
  for (int i = 0; i < 4; ++i) {
    out[2 * i] = gpu::halfBitsToFloat(static_cast<uint16_t>(w[i] & 0xffffu));
    out[2 * i + 1] = gpu::halfBitsToFloat(static_cast<uint16_t>(w[i] >> 16));
  }
}
__device__ __forceinline__ void load8(const gpu::F16* p, float* out) {
  unpackHalves(*reinterpret_cast<const gpu::U32x4*>(p), out);
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
static __global__ void gemvVecKernel(const float* x, const W* w, const float* bias, float* y,
                                     int64_t n, int64_t k) {
  const int lane = threadIdx.x % warpSize;
  const int64_t row0 =
      (static_cast<int64_t>(blockIdx.x) * (blockDim.x / warpSize) + threadIdx.x / warpSize) * R;
  // the whole wave leaves together: its shuffles stay among live lanes
  if (row0 >= n) return;
  const W* rows[R];
  for (int r = 0; r < R; ++r) rows[r] = w + (row0 + r < n ? row0 + r : row0) * k;
  float acc[M][R];
  for (int i = 0; i < M; ++i) {
    for (int r = 0; r < R; ++r) acc[i][r] = 0.0f;
  }
  TANDEM_UNROLL(4)
  for (int64_t j = static_cast<int64_t>(lane) * 8; j < k; j += static_cast<int64_t>(warpSize) * 8) {
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
      const float total = gpu::warpSum(acc[i][r]);
      if (lane == 0 && row0 + r < n) {
        y[i * n + row0 + r] = total + (bias != nullptr ? bias[row0 + r] : 0.0f);
      }
    }
  }
}

// weight rows a wave takes for M rows of x (x's loads per weight byte <= 2).
constexpr int rowsPerWave(int m) { return m <= 2 ? 1 : m <= 4 ? 2 : 4; }

template <class W, int M>
hipError_t launchVec(const float* x, const W* w, const float* bias, float* y, int64_t n, int64_t k,
                     hipStream_t stream) {
  constexpr int kR = rowsPerWave(M);
  const int64_t rows_per_block = static_cast<int64_t>(kVecThreads / gpu::hostWarpSize()) * kR;
  const dim3 grid(static_cast<unsigned>((n + rows_per_block - 1) / rows_per_block));
  return gpu::launch("gemv_vec", gemvVecKernel<W, M, kR>, grid, dim3(kVecThreads), stream, x, w,
                     bias, y, n, k);
}

template <class W>
hipError_t dispatchVec(const float* x, const W* w, const float* bias, float* y, int64_t m,
                       int64_t n, int64_t k, hipStream_t stream) {
  static_assert(kGemvMaxRows == 8);
  switch (m) {
    case 1: return launchVec<W, 1>(x, w, bias, y, n, k, stream);
    case 2: return launchVec<W, 2>(x, w, bias, y, n, k, stream);
    case 3: return launchVec<W, 3>(x, w, bias, y, n, k, stream);
    case 4: return launchVec<W, 4>(x, w, bias, y, n, k, stream);
    case 5: return launchVec<W, 5>(x, w, bias, y, n, k, stream);
    case 6: return launchVec<W, 6>(x, w, bias, y, n, k, stream);
    case 7: return launchVec<W, 7>(x, w, bias, y, n, k, stream);
    default: return launchVec<W, 8>(x, w, bias, y, n, k, stream);
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

hipError_t launchGemv(const float* x, const void* w, DType w_dtype, const float* bias, float* y,
                      int64_t m, int64_t n, int64_t k, hipStream_t stream) {
  if (m < 1 || m > kGemvMaxRows) return hipErrorInvalidValue;
  if (n == 0) return hipSuccess;
  return TANDEM_DISPATCH_ELEM(w_dtype, W, [&] {
    const W* wt = static_cast<const W*>(w);
    if (k % 8 == 0 && aligned16(w) && aligned16(x)) {
      return dispatchVec<W>(x, wt, bias, y, m, n, k, stream);
    }
    const int lanes = lanesFor(k);
    const int64_t cols_per_block = kThreads / lanes;
    const dim3 grid(static_cast<unsigned>((n + cols_per_block - 1) / cols_per_block));
    return gpu::launch("gemv", gemvKernel<W>, grid, dim3(kThreads), stream, x, wt, bias, y,
                       static_cast<int>(m), n, k, lanes);
  });
}

}  // namespace tandem::kernels::hip
