#include "kernels/hip/kv_cache.h"

#include "kernels/hip/device_utils.h"

namespace tandem::kernels::hip {

namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxChunks = 1024;

// grid (tokens, 2): y = 0 writes K, 1 writes V.
template <class T>
static __global__ void writeKvKernel(const float* k, const float* v, const int32_t* slots, T* cache,
                                     int num_layers, int width, int block_size, int num_blocks,
                                     int layer) {
  const int32_t slot = slots[blockIdx.x];
  const int block = slot / block_size;
  if (slot < 0 || block >= num_blocks) return;
  const int kv = blockIdx.y;
  const float* src = (kv == 0 ? k : v) + static_cast<int64_t>(blockIdx.x) * width;
  const int64_t slice = static_cast<int64_t>(block_size) * width;
  T* dst = cache + static_cast<int64_t>(block) * slice * 2 * num_layers +
           (static_cast<int64_t>(layer) * 2 + kv) * slice +
           static_cast<int64_t>(slot % block_size) * width;
  for (int j = threadIdx.x; j < width; j += blockDim.x) gpu::fromFloat(src[j], &dst[j]);
}

struct alignas(16) Word16 {
  uint32_t v[4];
};

// grid (pairs, chunks): each block copies a strided share of one block.
template <class W>
static __global__ void copyBlocksKernel(const W* src, int src_blocks, W* dst, int dst_blocks,
                                        const int32_t* pairs, int64_t words) {
  const int32_t s = pairs[2 * blockIdx.x], d = pairs[2 * blockIdx.x + 1];
  if (s < 0 || s >= src_blocks || d < 0 || d >= dst_blocks) return;
  const W* from = src + s * words;
  W* to = dst + d * words;
  const int64_t stride = static_cast<int64_t>(gridDim.y) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x; i < words;
       i += stride) {
    to[i] = from[i];
  }
}

template <class W>
hipError_t copyWith(const void* src, int src_blocks, void* dst, int dst_blocks,
                    const int32_t* pairs, int n, size_t block_bytes, hipStream_t stream) {
  const int64_t words = static_cast<int64_t>(block_bytes / sizeof(W));
  int64_t chunks = (words + kThreads * 4 - 1) / (kThreads * 4);
  if (chunks > kMaxChunks) chunks = kMaxChunks;
  return gpu::launch("copy_blocks", copyBlocksKernel<W>,
                     dim3(static_cast<unsigned>(n), static_cast<unsigned>(chunks)), dim3(kThreads),
                     stream, static_cast<const W*>(src), src_blocks, static_cast<W*>(dst),
                     dst_blocks, pairs, words);
}

}  // namespace

hipError_t launchWriteKv(const float* k, const float* v, const int32_t* slots, int64_t tokens,
                         void* cache, const KvShape& shape, int layer, hipStream_t stream) {
  if (tokens == 0) return hipSuccess;
  return TANDEM_DISPATCH_ELEM(shape.dtype, T, [&] {
    return gpu::launch("write_kv", writeKvKernel<T>, dim3(static_cast<unsigned>(tokens), 2),
                       dim3(kThreads), stream, k, v, slots, static_cast<T*>(cache),
                       shape.num_layers, shape.width, shape.block_size, shape.num_blocks, layer);
  });
}

hipError_t launchCopyBlocks(const void* src, int src_blocks, void* dst, int dst_blocks,
                            const int32_t* pairs, int n, size_t block_bytes, hipStream_t stream) {
  if (n == 0) return hipSuccess;
  const uintptr_t align = reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst) |
                          static_cast<uintptr_t>(block_bytes);
  if (align % 16 == 0) {
    return copyWith<Word16>(src, src_blocks, dst, dst_blocks, pairs, n, block_bytes, stream);
  }
  if (align % 4 == 0) {
    return copyWith<uint32_t>(src, src_blocks, dst, dst_blocks, pairs, n, block_bytes, stream);
  }
  return copyWith<uint8_t>(src, src_blocks, dst, dst_blocks, pairs, n, block_bytes, stream);
}

}  // namespace tandem::kernels::hip
