#include "kernels/hip/rope.h"

#include "kernels/hip/device_utils.h"

namespace tandem::kernels::hip {

namespace {

constexpr int kThreads = 128;

// one block per token; threads stride over (head, pair). The angle is
// rounded to float (as HF computes it) and its cosine and sine taken in
// double, so every backend agrees to the last bit.
static __global__ void ropeKernel(float* x, const int32_t* positions, const float* inv_freq,
                                  int heads, int head_dim, int interleaved) {
  const int half = head_dim / 2;
  const float pos = static_cast<float>(positions[blockIdx.x]);
  float* row = x + static_cast<int64_t>(blockIdx.x) * heads * head_dim;
  for (int k = threadIdx.x; k < heads * half; k += blockDim.x) {
    const int h = k / half, i = k % half;
    const float angle = pos * inv_freq[i];
    const float c = static_cast<float>(cos(static_cast<double>(angle)));
    const float s = static_cast<float>(sin(static_cast<double>(angle)));
    float* v = row + h * head_dim;
    const int a = interleaved ? 2 * i : i;
    const int b = interleaved ? 2 * i + 1 : i + half;
    const float x0 = v[a], x1 = v[b];
    v[a] = x0 * c - x1 * s;
    v[b] = x1 * c + x0 * s;
  }
}

}  // namespace

hipError_t launchRope(float* x, const int32_t* positions, const float* inv_freq, int64_t tokens,
                      int heads, int head_dim, bool interleaved, hipStream_t stream) {
  if (tokens == 0) return hipSuccess;
  return gpu::launch("rope", ropeKernel, dim3(static_cast<unsigned>(tokens)), dim3(kThreads),
                     stream, x, positions, inv_freq, heads, head_dim, interleaved ? 1 : 0);
}

}  // namespace tandem::kernels::hip
