#include "kernels/hip/embedding.h"

#include "kernels/hip/device_utils.h"

namespace tandem::kernels::hip {

namespace {

constexpr int kThreads = 256;

// one block per token; threads stride over the row.
template <class T>
static __global__ void embeddingKernel(const T* table, int64_t vocab, int64_t dim,
                                       const int32_t* ids, float* out) {
  const int64_t row = blockIdx.x;
  const int32_t id = ids[row];
  const bool valid = id >= 0 && id < vocab;
  for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) {
    out[row * dim + j] = valid ? gpu::toFloat(table[id * dim + j]) : NAN;
  }
}

}  // namespace

hipError_t launchEmbedding(const void* table, DType dtype, int64_t vocab, int64_t dim,
                           const int32_t* ids, int64_t n, float* out, hipStream_t stream) {
  if (n == 0) return hipSuccess;
  return TANDEM_DISPATCH_ELEM(dtype, T, [&] {
    return gpu::launch("embedding", embeddingKernel<T>, dim3(static_cast<unsigned>(n)),
                       dim3(kThreads), stream, static_cast<const T*>(table), vocab, dim, ids, out);
  });
}

}  // namespace tandem::kernels::hip
