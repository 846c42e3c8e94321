#include "kernels/hip/convert.h"

#include "kernels/hip/device_utils.h"
#include "kernels/hip/quant_device.h"

namespace tandem::kernels::hip {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 8192;

// the first 8 * groups values eight a thread (two 16-byte loads, one
// 16-byte store: x and out 16-byte aligned), the rest one by one.
template <class T>
static __global__ void convertKernel(const float* x, int64_t n, int64_t groups, T* out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < groups;
       g += stride) {
    const gpu::F32x4 a = *reinterpret_cast<const gpu::F32x4*>(x + 8 * g);
    const gpu::F32x4 b = *reinterpret_cast<const gpu::F32x4*>(x + 8 * g + 4);
    const float v[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
    T h[8];
    for (int i = 0; i < 8; ++i) gpu::fromFloat(v[i], &h[i]);
    uint32_t packed[4];
    for (int i = 0; i < 4; ++i) packed[i] = h[2 * i].bits | (static_cast<uint32_t>(h[2 * i + 1].bits) << 16);
    *reinterpret_cast<gpu::U32x4*>(out + 8 * g) = gpu::U32x4{packed[0], packed[1], packed[2], packed[3]};
  }
  for (int64_t i = groups * 8 + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
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
    // one 16-byte store of the eight (2-byte stores from neighbouring
    // threads 16 bytes apart cost a write transaction each)
    uint32_t packed[4];
    for (int i = 0; i < 4; ++i) {
      packed[i] = static_cast<uint32_t>(gpu::floatToHalfBits(v[2 * i])) |
                  (static_cast<uint32_t>(gpu::floatToHalfBits(v[2 * i + 1])) << 16);
    }
    *reinterpret_cast<gpu::U32x4*>(out + first) = gpu::U32x4{packed[0], packed[1], packed[2], packed[3]};
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
  const bool aligned =
      reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0;
  const int64_t groups = aligned ? n / 8 : 0;
  const dim3 grid = gridFor(std::max<int64_t>(aligned ? groups : n, 1));
  if (to == DType::kF16) {
    return gpu::launch("convert_f32", convertKernel<gpu::F16>, grid, dim3(kThreads), stream, x, n,
                       groups, static_cast<gpu::F16*>(out));
  }
  return gpu::launch("convert_f32", convertKernel<gpu::BF16>, grid, dim3(kThreads), stream, x, n,
                     groups, static_cast<gpu::BF16*>(out));
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
