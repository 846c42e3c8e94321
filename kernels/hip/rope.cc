#include "kernels/hip/rope.h"

#include "kernels/hip/device_utils.h"

namespace tandem::kernels::hip {

namespace {

constexpr int kThreads = 128;

// one block per token; threads stride over (head, pair). The angle is
// rounded to float (as HF computes it) and its cosine and sine taken in
// double, so every backend agrees to the last bit.
// pair i of head h of a token's row at position `pos`, rotated in place;
// the pair's two indices into the head through *a and *b.
__device__ __forceinline__ void rotatePair(float* row, int head_dim, int h, int i, float pos,
                                           const float* inv_freq, int interleaved, int* a, int* b) {
  const int half = head_dim / 2;
  const float angle = pos * inv_freq[i];
  const float c = static_cast<float>(cos(static_cast<double>(angle)));
  const float s = static_cast<float>(sin(static_cast<double>(angle)));
  float* v = row + h * head_dim;
  *a = interleaved ? 2 * i : i;
  *b = interleaved ? 2 * i + 1 : i + half;
  const float x0 = v[*a], x1 = v[*b];
  v[*a] = x0 * c - x1 * s;
  v[*b] = x1 * c + x0 * s;
}

static __global__ void ropeKernel(float* x, const int32_t* positions, const float* inv_freq,
                                  int heads, int head_dim, int interleaved) {
  const int half = head_dim / 2;
  const float pos = static_cast<float>(positions[blockIdx.x]);
  float* row = x + static_cast<int64_t>(blockIdx.x) * heads * head_dim;
  for (int k = threadIdx.x; k < heads * half; k += blockDim.x) {
    int a, b;
    rotatePair(row, head_dim, k / half, k % half, pos, inv_freq, interleaved, &a, &b);
  }
}

// one block per token: q's pairs, then k's (each thread writing the rotated
// pair it made to the cache), then v to the cache.
template <class T>
static __global__ void ropeWriteKvKernel(float* q, float* k, const float* v,
                                         const int32_t* positions, const float* inv_freq,
                                         int q_heads, int kv_heads, int head_dim, int interleaved,
                                         const int32_t* slots, T* cache, int num_layers,
                                         int block_size, int num_blocks, int layer) {
  const int half = head_dim / 2, width = kv_heads * head_dim;
  const float pos = static_cast<float>(positions[blockIdx.x]);
  float* q_row = q + static_cast<int64_t>(blockIdx.x) * q_heads * head_dim;
  float* k_row = k + static_cast<int64_t>(blockIdx.x) * width;
  const float* v_row = v + static_cast<int64_t>(blockIdx.x) * width;
  for (int e = threadIdx.x; e < q_heads * half; e += blockDim.x) {
    int a, b;
    rotatePair(q_row, head_dim, e / half, e % half, pos, inv_freq, interleaved, &a, &b);
  }
  const int32_t slot = slots[blockIdx.x];
  const int block = slot / block_size;
  const bool store = slot >= 0 && block < num_blocks;  // as launchWriteKv: skipped
  const int64_t slice = static_cast<int64_t>(block_size) * width;
  T* k_dst = cache + static_cast<int64_t>(block) * slice * 2 * num_layers +
             static_cast<int64_t>(layer) * 2 * slice + static_cast<int64_t>(slot % block_size) * width;
  T* v_dst = k_dst + slice;
  for (int e = threadIdx.x; e < kv_heads * half; e += blockDim.x) {
    const int h = e / half;
    int a, b;
    rotatePair(k_row, head_dim, h, e % half, pos, inv_freq, interleaved, &a, &b);
    if (store) {
      gpu::fromFloat(k_row[h * head_dim + a], &k_dst[h * head_dim + a]);
      gpu::fromFloat(k_row[h * head_dim + b], &k_dst[h * head_dim + b]);
    }
  }
  if (!store) return;
  for (int j = threadIdx.x; j < width; j += blockDim.x) gpu::fromFloat(v_row[j], &v_dst[j]);
}

}  // namespace

hipError_t launchRope(float* x, const int32_t* positions, const float* inv_freq, int64_t tokens,
                      int heads, int head_dim, bool interleaved, hipStream_t stream) {
  if (tokens == 0) return hipSuccess;
  return gpu::launch("rope", ropeKernel, dim3(static_cast<unsigned>(tokens)), dim3(kThreads),
                     stream, x, positions, inv_freq, heads, head_dim, interleaved ? 1 : 0);
}

hipError_t launchRopeWriteKv(float* q, float* k, const float* v, const int32_t* positions,
                             const float* inv_freq, int64_t tokens, int q_heads, int kv_heads,
                             int head_dim, bool interleaved, const int32_t* slots, void* cache,
                             const KvShape& shape, int layer, hipStream_t stream) {
  if (tokens == 0) return hipSuccess;
  return TANDEM_DISPATCH_ELEM(shape.dtype, T, [&] {
    return gpu::launch("rope_write_kv", ropeWriteKvKernel<T>, dim3(static_cast<unsigned>(tokens)),
                       dim3(kThreads), stream, q, k, v, positions, inv_freq, q_heads, kv_heads,
                       head_dim, interleaved ? 1 : 0, slots, static_cast<T*>(cache),
                       shape.num_layers, shape.block_size, shape.num_blocks, layer);
  });
}

}  // namespace tandem::kernels::hip
