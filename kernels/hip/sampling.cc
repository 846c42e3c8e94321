#include "kernels/hip/sampling.h"

#include "kernels/hip/device_utils.h"

namespace tandem::kernels::hip {

namespace {

constexpr int kThreads = 256;

static __global__ void softmaxKernel(const float* x, int64_t cols, float inv_temperature,
                                     float* out) {
  TANDEM_SHARED(float, scratch, [gpu::kMaxWarps]);
  const float* xr = x + blockIdx.x * cols;
  float* o = out + blockIdx.x * cols;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, xr[j] * inv_temperature);
  m = gpu::blockMax(m, scratch);
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) sum += expf(xr[j] * inv_temperature - m);
  sum = gpu::blockSum(sum, scratch);
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    o[j] = expf(xr[j] * inv_temperature - m) / sum;
  }
}

// a before b in top-k order: larger value first, then lower id (a NaN is
// before nothing and nothing is before it).
__device__ __forceinline__ bool before(float av, int ai, float bv, int bi) {
  return av > bv || (av == bv && ai < bi);
}

// the best of every thread's candidate (bv, bi) in top-k order, returned in
// every thread. best_v, best_i: shared [kMaxWarps], free again on return.
template <class Values, class Ids>
__device__ __forceinline__ void blockBest(float& bv, int& bi, Values best_v, Ids best_i) {
  for (int offset = warpSize / 2; offset > 0; offset >>= 1) {
    const float ov = TANDEM_SHFL_XOR(bv, offset);
    const int oi = TANDEM_SHFL_XOR(bi, offset);
    if (before(ov, oi, bv, bi)) {
      bv = ov;
      bi = oi;
    }
  }
  if (threadIdx.x % warpSize == 0) {
    best_v[threadIdx.x / warpSize] = bv;
    best_i[threadIdx.x / warpSize] = bi;
  }
  __syncthreads();
  bv = best_v[0];
  bi = best_i[0];
  for (int w = 1; w < static_cast<int>(blockDim.x / warpSize); ++w) {
    if (before(best_v[w], best_i[w], bv, bi)) {
      bv = best_v[w];
      bi = best_i[w];
    }
  }
  __syncthreads();
}

// the first maximum of a row, as std::max_element: NaN never wins except
// in column 0, where nothing compares above it.
static __global__ void greedyKernel(const float* x, int64_t cols, int32_t* ids, float* logprobs) {
  TANDEM_SHARED(float, best_v, [gpu::kMaxWarps]);
  TANDEM_SHARED(int, best_i, [gpu::kMaxWarps]);
  TANDEM_SHARED(float, scratch, [gpu::kMaxWarps]);
  const float* xr = x + blockIdx.x * cols;
  float bv = -INFINITY;
  int bi = 0x7fffffff;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    if (before(xr[j], static_cast<int>(j), bv, bi)) {
      bv = xr[j];
      bi = static_cast<int>(j);
    }
  }
  blockBest(bv, bi, best_v, best_i);
  if (!(xr[0] == xr[0]) || bi == 0x7fffffff) {  // NaN in column 0, or NaN only
    bi = 0;
    bv = xr[0];
  }
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) sum += expf(xr[j] - bv);
  sum = gpu::blockSum(sum, scratch);
  if (threadIdx.x == 0) {
    ids[blockIdx.x] = bi;
    logprobs[blockIdx.x] = -logf(sum);
  }
}

// k rounds; round i picks the best element after the one round i - 1 picked,
// so nothing needs marking. O(k * cols / threads) per row: k is small.
static __global__ void topKKernel(const float* x, int64_t cols, int k, float* values,
                                  int32_t* ids) {
  TANDEM_SHARED(float, best_v, [gpu::kMaxWarps]);
  TANDEM_SHARED(int, best_i, [gpu::kMaxWarps]);
  const float* xr = x + blockIdx.x * cols;
  float prev_v = INFINITY;
  int prev_i = -1;
  for (int round = 0; round < k; ++round) {
    float bv = -INFINITY;
    int bi = 0x7fffffff;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const float v = xr[j];
      const int id = static_cast<int>(j);
      if (before(prev_v, prev_i, v, id) && before(v, id, bv, bi)) {
        bv = v;
        bi = id;
      }
    }
    blockBest(bv, bi, best_v, best_i);
    if (threadIdx.x == 0) {
      values[blockIdx.x * k + round] = bv;
      ids[blockIdx.x * k + round] = bi;
    }
    prev_v = bv;
    prev_i = bi;
  }
}

// one thread per row: k is small and the scan is sequential by nature.
static __global__ void topPKernel(const float* sorted_probs, int64_t rows, int k, float top_p,
                                  int32_t* keep) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float sum = 0.0f;
  int n = 0;
  while (n < k) {
    sum += sorted_probs[r * k + n];
    ++n;
    if (sum >= top_p) break;
  }
  keep[r] = n;
}

}  // namespace

hipError_t launchGreedy(const float* x, int64_t rows, int64_t cols, int32_t* ids, float* logprobs,
                        hipStream_t stream) {
  if (cols < 1) return hipErrorInvalidValue;
  if (rows == 0) return hipSuccess;
  return gpu::launch("greedy", greedyKernel, dim3(static_cast<unsigned>(rows)), dim3(kThreads),
                     stream, x, cols, ids, logprobs);
}

hipError_t launchSoftmax(const float* x, int64_t rows, int64_t cols, float temperature, float* out,
                         hipStream_t stream) {
  if (rows == 0) return hipSuccess;
  if (!(temperature > 0.0f)) return hipErrorInvalidValue;
  return gpu::launch("softmax", softmaxKernel, dim3(static_cast<unsigned>(rows)), dim3(kThreads),
                     stream, x, cols, 1.0f / temperature, out);
}

hipError_t launchTopK(const float* x, int64_t rows, int64_t cols, int k, float* values,
                      int32_t* ids, hipStream_t stream) {
  if (k < 1 || k > cols) return hipErrorInvalidValue;
  if (rows == 0) return hipSuccess;
  return gpu::launch("top_k", topKKernel, dim3(static_cast<unsigned>(rows)), dim3(kThreads), stream,
                     x, cols, k, values, ids);
}

hipError_t launchTopP(const float* sorted_probs, int64_t rows, int k, float top_p, int32_t* keep,
                      hipStream_t stream) {
  if (k < 1) return hipErrorInvalidValue;
  if (rows == 0) return hipSuccess;
  const unsigned blocks = static_cast<unsigned>((rows + 63) / 64);
  return gpu::launch("top_p", topPKernel, dim3(blocks), dim3(64), stream, sorted_probs, rows, k,
                     top_p, keep);
}

}  // namespace tandem::kernels::hip
