#include "kernels/hip/rms_norm.h"

#include "kernels/hip/device_utils.h"

namespace tandem::kernels::hip {

namespace {

// one block per row: a strided sum of squares, a block reduction, a scale.
// Rows of Qwen3's per-head norm are short (head_dim), so the block is sized
// to the row.
template <class W, class O>
static __global__ void rmsNormKernel(const float* x, const W* weight, int64_t dim, float eps,
                                     O* out) {
  TANDEM_SHARED(float, scratch, [gpu::kMaxWarps]);
  const float* xr = x + blockIdx.x * dim;
  float ss = 0.0f;
  for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) ss += xr[j] * xr[j];
  ss = gpu::blockSum(ss, scratch);
  const float inv = 1.0f / sqrtf(ss / static_cast<float>(dim) + eps);
  O* o = out + blockIdx.x * dim;
  for (int64_t j = threadIdx.x; j < dim; j += blockDim.x)
    gpu::fromFloat(xr[j] * inv * gpu::toFloat(weight[j]), o + j);
}

// the residual add first (each thread adds the elements it then squares and
// scales, so out may alias delta), then rmsNormKernel's sum and scale.
template <class W, class O>
static __global__ void addRmsNormKernel(float* x, const float* delta, const W* weight, int64_t dim,
                                        float eps, O* out) {
  TANDEM_SHARED(float, scratch, [gpu::kMaxWarps]);
  float* xr = x + blockIdx.x * dim;
  const float* dr = delta + blockIdx.x * dim;
  float ss = 0.0f;
  for (int64_t j = threadIdx.x; j < dim; j += blockDim.x) {
    xr[j] = xr[j] + dr[j];
    ss += xr[j] * xr[j];
  }
  ss = gpu::blockSum(ss, scratch);
  const float inv = 1.0f / sqrtf(ss / static_cast<float>(dim) + eps);
  O* o = out + blockIdx.x * dim;
  for (int64_t j = threadIdx.x; j < dim; j += blockDim.x)
    gpu::fromFloat(xr[j] * inv * gpu::toFloat(weight[j]), o + j);
}

// the block of a row of `dim`: sized to the row (Qwen3's per-head norm rows
// are short).
unsigned threadsFor(int64_t dim) { return dim >= 256 ? 256 : (dim > 64 ? 128 : 64); }

}  // namespace

hipError_t launchAddRmsNorm(float* x, const float* delta, const void* weight, DType weight_dtype,
                            int64_t rows, int64_t dim, float eps, void* out, DType out_dtype,
                            hipStream_t stream) {
  if (rows == 0) return hipSuccess;
  return TANDEM_DISPATCH_ELEM(weight_dtype, W, [&] {
    return TANDEM_DISPATCH_ELEM(out_dtype, O, [&] {
      return gpu::launch("add_rms_norm", addRmsNormKernel<W, O>, dim3(static_cast<unsigned>(rows)),
                         dim3(threadsFor(dim)), stream, x, delta, static_cast<const W*>(weight),
                         dim, eps, static_cast<O*>(out));
    });
  });
}

hipError_t launchRmsNorm(const float* x, const void* weight, DType weight_dtype, int64_t rows,
                         int64_t dim, float eps, void* out, DType out_dtype, hipStream_t stream) {
  if (rows == 0) return hipSuccess;
  return TANDEM_DISPATCH_ELEM(weight_dtype, W, [&] {
    return TANDEM_DISPATCH_ELEM(out_dtype, O, [&] {
      return gpu::launch("rms_norm", rmsNormKernel<W, O>, dim3(static_cast<unsigned>(rows)),
                         dim3(threadsFor(dim)), stream, x, static_cast<const W*>(weight), dim, eps,
                         static_cast<O*>(out));
    });
  });
}

}  // namespace tandem::kernels::hip
