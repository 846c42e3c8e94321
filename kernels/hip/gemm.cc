#include "kernels/hip/gemm.h"

#include "kernels/hip/device_utils.h"
#include "kernels/hip/gemm_tile.h"

namespace tandem::kernels::hip {

namespace {

using gemm_tile::kThreads;
using gemm_tile::kTileK;
using gemm_tile::kTileN;

// a dense weight tile (F32, F16 or BF16), converted to F32 on the way in:
// consecutive threads load consecutive k of one row (coalesced).
template <class W>
struct DenseWeights {
  const W* w;
  template <class Tile>
  __device__ void load(Tile ws, int64_t n0, int64_t k0, int64_t n, int64_t k) const {
    for (int e = threadIdx.x; e < kTileN * kTileK; e += kThreads) {
      const int r = e / kTileK, c = e % kTileK;
      const int64_t gn = n0 + r, gk = k0 + c;
      ws[c][r] = gn < n && gk < k ? gpu::toFloat(w[gn * k + gk]) : 0.0f;
    }
  }
};

}  // namespace

hipError_t launchGemm(const float* x, const void* w, DType w_dtype, const float* bias, float* y,
                      int64_t m, int64_t n, int64_t k, hipStream_t stream) {
  return TANDEM_DISPATCH_ELEM(w_dtype, W, [&] {
    return gemm_tile::launch(x, DenseWeights<W>{static_cast<const W*>(w)}, bias, y, m, n, k,
                             stream);
  });
}

}  // namespace tandem::kernels::hip
