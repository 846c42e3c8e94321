// The tiled GEMM kernel shared by the dense (gemm.cc) and the quantized
// (gemm_quant.cc) weights: y = x * w^T (+ bias), both operand tiles staged
// in LDS as F32. What differs between weight types is only how a weight tile
// gets into LDS, so the kernel takes a `Weights` loader:
//
//   template <class Tile>
//   __device__ void load(Tile ws, int64_t n0, int64_t k0, int64_t n, int64_t k) const;
//
// called by every thread of the block: together they fill
// ws[c][r] = w[n0 + r][k0 + c] (F32) for r < kTileN, c < kTileK, zero past
// n and k. On waves of 64 the tile is computed with the 16x16x4 F32 matrix
// instruction (CDNA's MFMA; gpu_vendor.h), elsewhere with a portable 4x4
// register tile per thread.
#pragma once

#include <cstdint>

#include "kernels/hip/device_utils.h"
#include "kernels/hip/gpu_vendor.h"

namespace tandem::kernels::hip::gemm_tile {

inline constexpr int kTileM = 64;
inline constexpr int kTileN = 64;
inline constexpr int kTileK = 16;
inline constexpr int kThreads = 256;  // 16 x 16 threads, each a 4 x 4 tile of y
inline constexpr int kPad = 4;        // keeps the k-major tiles off one LDS bank

// block (bx, by) computes y[by * 64 .. +64, bx * 64 .. +64]. Tiles are stored
// k-major so the inner loop reads 4 rows of x and 4 columns of w with
// consecutive threads on consecutive addresses. kMfma (waves of 64): each
// wave computes a 32x32 quarter of the tile as 2x2 16x16 fragments with
// the 16x16x4 F32 matrix instruction; otherwise each thread a 4x4 tile.
template <class Weights, bool kMfma>
static __global__ void gemmKernel(const float* x, Weights w, const float* bias, float* y,
                                  int64_t m, int64_t n, int64_t k) {
  TANDEM_SHARED(float, xs, [kTileK][kTileM + kPad]);
  TANDEM_SHARED(float, ws, [kTileK][kTileN + kPad]);
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kTileM;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kTileN;
  const int lane = threadIdx.x % 64, wm = (threadIdx.x / 64) / 2 * 32,
            wn = (threadIdx.x / 64) % 2 * 32;
  // the 4x4 tile of the portable path, or the 2x2 fragments of 4 of the mfma path
  float acc[4][4];
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  }
  for (int64_t k0 = 0; k0 < k; k0 += kTileK) {
    // consecutive threads load consecutive k of one row: coalesced
    for (int e = threadIdx.x; e < kTileM * kTileK; e += kThreads) {
      const int r = e / kTileK, c = e % kTileK;
      const int64_t gm = m0 + r, gk = k0 + c;
      xs[c][r] = gm < m && gk < k ? x[gm * k + gk] : 0.0f;
    }
    w.load(ws, n0, k0, n, k);
    __syncthreads();
    if constexpr (kMfma) {
      for (int c = 0; c < kTileK; c += 4) {
        float a[2], b[2];
        for (int f = 0; f < 2; ++f) a[f] = xs[c + lane / 16][wm + 16 * f + lane % 16];
        for (int f = 0; f < 2; ++f) b[f] = ws[c + lane / 16][wn + 16 * f + lane % 16];
        for (int fi = 0; fi < 2; ++fi) {
          for (int fj = 0; fj < 2; ++fj) TANDEM_MFMA_F32_16X16X4(a[fi], b[fj], acc[2 * fi + fj]);
        }
      }
    } else {
      for (int c = 0; c < kTileK; ++c) {
        float a[4], b[4];
        for (int i = 0; i < 4; ++i) a[i] = xs[c][ty + 16 * i];
        for (int j = 0; j < 4; ++j) b[j] = ws[c][tx + 16 * j];
        for (int i = 0; i < 4; ++i) {
          for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
        }
      }
    }
    __syncthreads();  // the next tile overwrites xs and ws
  }
  if constexpr (kMfma) {
    for (int f = 0; f < 4; ++f) {
      const int64_t col = n0 + wn + 16 * (f % 2) + lane % 16;
      for (int i = 0; i < 4; ++i) {
        const int64_t row = m0 + wm + 16 * (f / 2) + 4 * (lane / 16) + i;
        if (row < m && col < n) y[row * n + col] = acc[f][i] + (bias != nullptr ? bias[col] : 0.0f);
      }
    }
  } else {
    for (int i = 0; i < 4; ++i) {
      const int64_t gm = m0 + ty + 16 * i;
      if (gm >= m) continue;
      for (int j = 0; j < 4; ++j) {
        const int64_t gn = n0 + tx + 16 * j;
        if (gn < n) y[gm * n + gn] = acc[i][j] + (bias != nullptr ? bias[gn] : 0.0f);
      }
    }
  }
}

// the grid of gemmKernel for y [m, n] and its launch, on the matrix
// instruction where waves are 64 wide.
template <class Weights>
hipError_t launch(const float* x, Weights w, const float* bias, float* y, int64_t m, int64_t n,
                  int64_t k, hipStream_t stream) {
  if (m == 0 || n == 0) return hipSuccess;
  const dim3 grid(static_cast<unsigned>((n + kTileN - 1) / kTileN),
                  static_cast<unsigned>((m + kTileM - 1) / kTileM));
  return gpu::hostWarpSize() == 64
             ? gpu::launch("gemm_mfma", gemmKernel<Weights, true>, grid, dim3(kThreads), stream,
                           x, w, bias, y, m, n, k)
             : gpu::launch("gemm", gemmKernel<Weights, false>, grid, dim3(kThreads), stream, x,
                           w, bias, y, m, n, k);
}

}  // namespace tandem::kernels::hip::gemm_tile
