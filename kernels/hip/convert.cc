#include "kernels/hip/convert.h"

#include "kernels/hip/device_utils.h"
#include "kernels/hip/quant_device.h"

namespace tandem::kernels::hip {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 8192;

template <class T>
static __global__ void convertKernel(const float* x, int64_t n, T* out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    gpu::fromFloat(x[i], out + i);
  }
}

// thread g takes values 8g .. 8g + 7 of the flattened [n, k] matrix (eight
// consecutive values of a block share one scale: quant_device.h).
template <class Q>
static __global__ void dequantizeKernel(const typename Q::Block* w, int64_t groups, int64_t k,
                                        uint16_t* out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < groups;
       g += stride) {
    const int64_t first = g * 8, row = first / k, col = first % k;
    float v[8];
    gpu::dequantRow8<Q>(w + row * (k / Q::kValues), col, v);
    for (int i = 0; i < 8; ++i) out[first + i] = gpu::floatToHalfBits(v[i]);
  }
}

dim3 gridFor(int64_t items) {
  int64_t blocks = (items + kThreads - 1) / kThreads;
  return dim3(static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks));
}

}  // namespace

hipError_t launchConvertF32(const float* x, int64_t n, DType to, void* out, hipStream_t stream) {
  if (to != DType::kF16 && to != DType::kBF16) return hipErrorInvalidValue;
  if (n == 0) return hipSuccess;
  return TANDEM_DISPATCH_ELEM(to, T, [&] {
    return gpu::launch("convert_f32", convertKernel<T>, gridFor(n), dim3(kThreads), stream, x, n,
                       static_cast<T*>(out));
  });
}

hipError_t launchDequantizeF16(const void* w, DType w_dtype, int64_t n, int64_t k, uint16_t* out,
                               hipStream_t stream) {
  return TANDEM_DISPATCH_QUANT(w_dtype, Q, [&]() -> hipError_t {
    if (k % Q::kValues != 0) return hipErrorInvalidValue;
    const int64_t groups = n * k / 8;
    if (groups == 0) return hipSuccess;
    return gpu::launch("dequantize_f16", dequantizeKernel<Q>, gridFor(groups), dim3(kThreads),
                       stream, static_cast<const typename Q::Block*>(w), groups, k, out);
  });
}

}  // namespace tandem::kernels::hip
