#include "kernels/hip/gemm_quant.h"

#include "kernels/hip/gemm_tile.h"
#include "kernels/hip/quant_device.h"

namespace tandem::kernels::hip {

namespace {

using gemm_tile::kThreads;
using gemm_tile::kTileK;
using gemm_tile::kTileN;

constexpr int kGroup = 8;  // values a thread dequantizes at once
// a tile's k range lies inside one block of every format (32 and 256 are
// multiples of 16), and eight values share a scale
static_assert(kTileK % kGroup == 0 && 32 % kTileK == 0);

// a weight tile of Q blocks, dequantized to F32 into LDS: thread e takes
// eight consecutive values of row e / (kTileK / 8).
template <class Q>
struct QuantWeights {
  const typename Q::Block* w;
  template <class Tile>
  __device__ void load(Tile ws, int64_t n0, int64_t k0, int64_t n, int64_t k) const {
    constexpr int kGroupsPerRow = kTileK / kGroup;
    for (int e = threadIdx.x; e < kTileN * kGroupsPerRow; e += kThreads) {
      const int r = e / kGroupsPerRow, c = e % kGroupsPerRow * kGroup;
      const int64_t gn = n0 + r;
      float v[kGroup];
      if (gn < n) {
        gpu::dequantRow8<Q>(w + gn * (k / Q::kValues), k0 + c, v);
      } else {
        for (int i = 0; i < kGroup; ++i) v[i] = 0.0f;
      }
      for (int i = 0; i < kGroup; ++i) ws[c + i][r] = v[i];
    }
  }
};

}  // namespace

hipError_t launchGemmQuant(const float* x, const void* w, DType w_dtype, const float* bias,
                           float* y, int64_t m, int64_t n, int64_t k, hipStream_t stream) {
  return TANDEM_DISPATCH_QUANT(w_dtype, Q, [&]() -> hipError_t {
    if (k % Q::kValues != 0) return hipErrorInvalidValue;
    return gemm_tile::launch(x, QuantWeights<Q>{static_cast<const typename Q::Block*>(w)}, bias, y,
                             m, n, k, stream);
  });
}

}  // namespace tandem::kernels::hip
