#include "kernels/hip/gather_rows.h"

#include "kernels/hip/device_utils.h"

namespace tandem::kernels::hip {

namespace {

constexpr int kThreads = 256;

static __global__ void gatherRowsKernel(const float* x, int64_t num_x_rows, int64_t cols,
                                        const int32_t* rows, float* out) {
  const int32_t r = rows[blockIdx.x];
  const bool valid = r >= 0 && r < num_x_rows;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    out[blockIdx.x * cols + j] = valid ? x[r * cols + j] : NAN;
  }
}

}  // namespace

hipError_t launchGatherRows(const float* x, int64_t num_x_rows, int64_t cols, const int32_t* rows,
                            int64_t n, float* out, hipStream_t stream) {
  if (n == 0) return hipSuccess;
  return gpu::launch("gather_rows", gatherRowsKernel, dim3(static_cast<unsigned>(n)),
                     dim3(kThreads), stream, x, num_x_rows, cols, rows, out);
}

}  // namespace tandem::kernels::hip
