// The one place where GPU vendors differ. Kernel sources include this and
// are written in HIP; it maps them onto
//  - AMD: hipcc (ROCm / Debian's hipcc), wavefront 64 on CDNA, 32 on RDNA;
//  - NVIDIA: nvcc, through the CUDA runtime (hip* names mapped to cuda*);
//  - the host emulator (kernels/emu): any C++20 compiler, for CI.
// Beyond the HIP language, kernels use only what is declared here:
// TANDEM_SHARED for __shared__ arrays (bounds-checked on the emulator),
// TANDEM_SHFL* / TANDEM_BALLOT (mask-free, as HIP's), TANDEM_MFMA_F32_16X16X4
// (CDNA's matrix instruction, selected at compile time with a portable
// fallback), gpu::dot4I8 (dp4a), the 16-byte vectors U32x4/F32x4,
// TANDEM_UNROLL, the matrix cores' 16x16x16 tiles (gpu::mma::Tiles), stream
// capture into graphs (hipStreamBeginCapture ..., gpu::graphInstantiate) and
// gpu::launch. The vendor's BLAS is named below
// in hipBLASLt's names and wrapped by gpu_blas.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#define TANDEM_GPU_AMD 1
#elif defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>
#define TANDEM_GPU_NVIDIA 1
#else
#include "kernels/emu/device_api.h"
#include "kernels/emu/runtime.h"
#define TANDEM_GPU_EMU 1
#endif

#if defined(TANDEM_GPU_NVIDIA)
using hipError_t = cudaError_t;
using hipStream_t = cudaStream_t;
using hipEvent_t = cudaEvent_t;
using hipDeviceProp_t = cudaDeviceProp;
#define hipSuccess cudaSuccess
#define hipErrorOutOfMemory cudaErrorMemoryAllocation
#define hipErrorInvalidValue cudaErrorInvalidValue
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipMemcpyDefault cudaMemcpyDefault
#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipHostMalloc(p, n, f) cudaMallocHost(p, n)
#define hipHostFree cudaFreeHost
#define hipHostRegister cudaHostRegister
#define hipHostUnregister cudaHostUnregister
#define hipHostRegisterDefault cudaHostRegisterDefault
#define hipMemcpy cudaMemcpy
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemsetAsync cudaMemsetAsync
#define hipStreamCreate cudaStreamCreate
#define hipStreamDestroy cudaStreamDestroy
#define hipStreamSynchronize cudaStreamSynchronize
#define hipStreamWaitEvent cudaStreamWaitEvent
#define hipEventCreate cudaEventCreate
#define hipEventDestroy cudaEventDestroy
#define hipEventRecord cudaEventRecord
#define hipEventSynchronize cudaEventSynchronize
#define hipEventElapsedTime cudaEventElapsedTime
#define hipDeviceSynchronize cudaDeviceSynchronize
#define hipGetDeviceProperties cudaGetDeviceProperties
#define hipGetDeviceCount cudaGetDeviceCount
#define hipSetDevice cudaSetDevice
#define hipGetDevice cudaGetDevice
#define hipGetLastError cudaGetLastError
#define hipGetErrorString cudaGetErrorString
using hipGraph_t = cudaGraph_t;
using hipGraphExec_t = cudaGraphExec_t;
#define hipStreamCaptureModeRelaxed cudaStreamCaptureModeRelaxed
#define hipStreamBeginCapture cudaStreamBeginCapture
#define hipStreamEndCapture cudaStreamEndCapture
#define hipGraphLaunch cudaGraphLaunch
#define hipGraphDestroy cudaGraphDestroy
#define hipGraphExecDestroy cudaGraphExecDestroy
#endif

// 32-byte aligned: tiles of the matrix cores start on 32 bytes
#if !defined(TANDEM_GPU_EMU)
#define TANDEM_SHARED(type, name, dims) __shared__ __attribute__((aligned(32))) type name dims
#endif

// The vendor's BLAS, in hipBLASLt's names (gpu_blas.cc is written in them):
// NVIDIA's cuBLASLt under those names, AMD's hipBLASLt where ROCm ships it
// (ROCm >= 6; Debian's ROCm 5.2 has none). TANDEM_GPU_VENDOR_BLAS says
// whether this build has one; gpu_blas.cc loads the library at run time, so
// a binary without it on the machine still runs (on tandem's own GEMM).
#if defined(TANDEM_GPU_NVIDIA)
#include <cublasLt.h>
#define TANDEM_GPU_VENDOR_BLAS 1
#define TANDEM_GPU_VENDOR_BLAS_LIBS {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"}
#define hipblasStatus_t cublasStatus_t
#define hipblasOperation_t cublasOperation_t
#define hipblasComputeType_t cublasComputeType_t
#define hipDataType cudaDataType_t
#define hipblasLtHandle_t cublasLtHandle_t
#define hipblasLtMatmulDesc_t cublasLtMatmulDesc_t
#define hipblasLtMatrixLayout_t cublasLtMatrixLayout_t
#define hipblasLtMatmulPreference_t cublasLtMatmulPreference_t
#define hipblasLtMatmulHeuristicResult_t cublasLtMatmulHeuristicResult_t
#define HIPBLAS_STATUS_SUCCESS CUBLAS_STATUS_SUCCESS
#define HIPBLAS_OP_N CUBLAS_OP_N
#define HIPBLAS_OP_T CUBLAS_OP_T
#define HIPBLAS_COMPUTE_32F CUBLAS_COMPUTE_32F
#define HIP_R_32F CUDA_R_32F
#define HIP_R_16F CUDA_R_16F
#define HIP_R_16BF CUDA_R_16BF
#define HIPBLASLT_MATMUL_DESC_TRANSA CUBLASLT_MATMUL_DESC_TRANSA
#define HIPBLASLT_MATMUL_DESC_TRANSB CUBLASLT_MATMUL_DESC_TRANSB
#define HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
#define hipblasLtCreate cublasLtCreate
#define hipblasLtDestroy cublasLtDestroy
#define hipblasLtMatmulDescCreate cublasLtMatmulDescCreate
#define hipblasLtMatmulDescDestroy cublasLtMatmulDescDestroy
#define hipblasLtMatmulDescSetAttribute cublasLtMatmulDescSetAttribute
#define hipblasLtMatrixLayoutCreate cublasLtMatrixLayoutCreate
#define hipblasLtMatrixLayoutDestroy cublasLtMatrixLayoutDestroy
#define hipblasLtMatmulPreferenceCreate cublasLtMatmulPreferenceCreate
#define hipblasLtMatmulPreferenceDestroy cublasLtMatmulPreferenceDestroy
#define hipblasLtMatmulPreferenceSetAttribute cublasLtMatmulPreferenceSetAttribute
#define hipblasLtMatmulAlgoGetHeuristic cublasLtMatmulAlgoGetHeuristic
#define hipblasLtMatmul cublasLtMatmul
#elif defined(TANDEM_GPU_AMD) && __has_include(<hipblaslt/hipblaslt.h>)
#include <hipblaslt/hipblaslt.h>
#define TANDEM_GPU_VENDOR_BLAS 1
#define TANDEM_GPU_VENDOR_BLAS_LIBS {"libhipblaslt.so.1", "libhipblaslt.so.0", "libhipblaslt.so"}
#endif

namespace tandem::gpu {

// the most warps a block of 1024 threads can have at the smallest wave size;
// sizes per-warp scratch arrays.
inline constexpr int kMaxWarps = 32;

#if defined(TANDEM_GPU_NVIDIA)
template <class T>
__device__ __forceinline__ T shflXor(T v, int lane_mask, int width = warpSize) {
  return __shfl_xor_sync(0xffffffffu, v, lane_mask, width);
}
// within groups of `width` lanes, some of which may have left the kernel
// (whole groups at a time): only the live lanes may be named in the mask.
template <class T>
__device__ __forceinline__ T shflXorWidth(T v, int lane_mask, int width) {
  return __shfl_xor_sync(__activemask(), v, lane_mask, width);
}
template <class T>
__device__ __forceinline__ T shfl(T v, int src_lane, int width = warpSize) {
  return __shfl_sync(0xffffffffu, v, src_lane, width);
}
__device__ __forceinline__ uint64_t ballot(bool p) { return __ballot_sync(0xffffffffu, p); }
#else
// HIP and the emulator share HIP's mask-free names (the emulator's record
// their call site through default arguments, so no wrapper here).
#define TANDEM_GPU_HIP_COLLECTIVES 1
#endif

// 16-bit float bits to float, exactly (f16 subnormals included): the
// hardware's conversion in device code (exact for every f16), the same
// result in software on the emulator and in host passes.
__device__ __forceinline__ float halfBitsToFloat(uint16_t h) {
#if defined(TANDEM_GPU_NVIDIA) && defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(h));
#elif defined(TANDEM_GPU_AMD) && defined(__HIP_DEVICE_COMPILE__)
  return static_cast<float>(__builtin_bit_cast(_Float16, h));
#else
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1fu) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {
    // subnormal: value = mant * 2^-24, exact in float
    const float f = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return sign != 0 ? -f : f;
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
#endif
}

__device__ __forceinline__ float bf16BitsToFloat(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

}  // namespace tandem::gpu

#if defined(TANDEM_GPU_HIP_COLLECTIVES)
#define TANDEM_SHFL_XOR(v, mask) __shfl_xor((v), (mask))
#define TANDEM_SHFL_XOR_WIDTH(v, mask, width) __shfl_xor((v), (mask), (width))
#define TANDEM_SHFL(v, lane) __shfl((v), (lane))
#define TANDEM_BALLOT(p) static_cast<uint64_t>(__ballot(p))
#else
#define TANDEM_SHFL_XOR(v, mask) ::tandem::gpu::shflXor((v), (mask))
#define TANDEM_SHFL_XOR_WIDTH(v, mask, width) ::tandem::gpu::shflXorWidth((v), (mask), (width))
#define TANDEM_SHFL(v, lane) ::tandem::gpu::shfl((v), (lane))
#define TANDEM_BALLOT(p) ::tandem::gpu::ballot(p)
#endif

// one v_mfma_f32_16x16x4f32 across a wave of 64: lane l gives a = A[l % 16][l / 16]
// and b = B[l / 16][l % 16] and accumulates acc[i] += (A * B)[4 * (l / 16) + i][l % 16].
// CDNA's matrix cores on gfx90a/gfx94x device code, the same product from shuffles on
// other wave-64 devices, the emulator's model of the instruction on the host.
#if defined(TANDEM_GPU_EMU)
#define TANDEM_MFMA_F32_16X16X4(a, b, acc) ::tandem::emu::mfma16x16x4F32((a), (b), (acc))
#else
#define TANDEM_MFMA_F32_16X16X4(a, b, acc) ::tandem::gpu::mfma16x16x4F32((a), (b), (acc))
namespace tandem::gpu {
__device__ __forceinline__ void mfma16x16x4F32(float a, float b, float (&acc)[4]) {
#if defined(__HIP_DEVICE_COMPILE__) && \
    (defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__))
  typedef float floatx4 __attribute__((ext_vector_type(4)));
  floatx4 c = {acc[0], acc[1], acc[2], acc[3]};
  c = __builtin_amdgcn_mfma_f32_16x16x4f32(a, b, c, 0, 0, 0);
  for (int i = 0; i < 4; ++i) acc[i] = c[i];
#else
  const int lane = threadIdx.x % 64;
  const int col = lane % 16, row0 = 4 * (lane / 16);
  for (int k = 0; k < 4; ++k) {
    const float bk = TANDEM_SHFL(b, col + 16 * k);
    for (int i = 0; i < 4; ++i) acc[i] += TANDEM_SHFL(a, row0 + i + 16 * k) * bk;
  }
#endif
}
}  // namespace tandem::gpu
#endif

// TANDEM_UNROLL(n): unroll the next loop n times where a GPU compiler
// compiles it (more loads in flight); nothing on the emulator.
#if defined(TANDEM_GPU_EMU)
#define TANDEM_UNROLL(n)
#else
#define TANDEM_UNROLL_PRAGMA(x) _Pragma(#x)
#define TANDEM_UNROLL(n) TANDEM_UNROLL_PRAGMA(unroll n)
#endif

namespace tandem::gpu {

// 16 bytes loaded or stored as one vector access (the widest a lane issues):
// the runtime's own uint4/float4, a plain aligned struct on the emulator.
#if defined(TANDEM_GPU_EMU)
struct alignas(16) U32x4 {
  uint32_t x, y, z, w;
};
struct alignas(16) F32x4 {
  float x, y, z, w;
};
#else
using U32x4 = uint4;
using F32x4 = float4;
#endif

// c + the dot product of the four signed bytes of a and b (dp4a /
// v_dot4_i32_i8, where the device has them).
__device__ __forceinline__ int dot4I8(int a, int b, int c) {
#if defined(TANDEM_GPU_NVIDIA) && defined(__CUDA_ARCH__)
  return __dp4a(a, b, c);
#elif defined(TANDEM_GPU_AMD) && defined(__HIP_DEVICE_COMPILE__) && \
    (defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__))
  return __builtin_amdgcn_sdot4(a, b, c, false);
#else
  for (int i = 0; i < 4; ++i) {
    c += static_cast<int>(static_cast<int8_t>(static_cast<uint32_t>(a) >> (8 * i))) *
         static_cast<int>(static_cast<int8_t>(static_cast<uint32_t>(b) >> (8 * i)));
  }
  return c;
#endif
}

}  // namespace tandem::gpu

// ---- matrix cores: a wave's 16 x 16 x 16 products of 16-bit operands ----
// gpu::mma::Tiles<kBf16> names a wave's tiles for F16 (kBf16 false) or BF16
// operands given as raw 16-bit words in memory (LDS or global; leading
// dimensions in elements, a multiple of 8; tile starts 32-byte aligned);
// sums are F32:
//   A a; loadA(a, p, ld)          A[r][c] = p[r * ld + c]
//   B b; loadBt(b, p, ld)         B[k][n] = p[n * ld + k]  (rows of B^T)
//   B b; loadB(b, p, ld)          B[k][n] = p[k * ld + n]
//   Acc c; zero(c); fma(c, a, b)  c += A * B
//   store(q, ld, c)               q[r * ld + n] = c[r][n]  (F32)
// Which lane holds what is the vendor's business (no kernel reads a tile's
// elements): NVIDIA's wmma fragments (BF16 from sm_80), CDNA's 16x16x16 MFMA
// on a wave of 64 in its documented lane layout, and on the emulator every
// lane holding the whole tile. Every lane of the wave calls each operation.
namespace tandem::gpu::mma {

#if defined(TANDEM_GPU_NVIDIA)
template <bool kBf16>
struct Tiles {
  using Elem = std::conditional_t<kBf16, __nv_bfloat16, __half>;
  using A = nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, Elem, nvcuda::wmma::row_major>;
  using Bt = nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, Elem, nvcuda::wmma::col_major>;
  using B = nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, Elem, nvcuda::wmma::row_major>;
  using Acc = nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float>;
  static __device__ __forceinline__ void loadA(A& a, const uint16_t* p, int ld) {
    nvcuda::wmma::load_matrix_sync(a, reinterpret_cast<const Elem*>(p), ld);
  }
  static __device__ __forceinline__ void loadBt(Bt& b, const uint16_t* p, int ld) {
    nvcuda::wmma::load_matrix_sync(b, reinterpret_cast<const Elem*>(p), ld);
  }
  static __device__ __forceinline__ void loadB(B& b, const uint16_t* p, int ld) {
    nvcuda::wmma::load_matrix_sync(b, reinterpret_cast<const Elem*>(p), ld);
  }
  static __device__ __forceinline__ void zero(Acc& c) { nvcuda::wmma::fill_fragment(c, 0.0f); }
  template <class Bop>
  static __device__ __forceinline__ void fma(Acc& c, const A& a, const Bop& b) {
    nvcuda::wmma::mma_sync(c, a, b, c);
  }
  static __device__ __forceinline__ void store(float* q, int ld, const Acc& c) {
    nvcuda::wmma::store_matrix_sync(q, c, ld, nvcuda::wmma::mem_row_major);
  }
};
#elif defined(TANDEM_GPU_AMD)
// v_mfma_f32_16x16x16{f16,bf16_1k}: lane l holds A[l % 16][4 (l / 16) + i]
// and B[4 (l / 16) + i][l % 16] (i < 4) and sums D[4 (l / 16) + i][l % 16].
template <bool kBf16>
struct Tiles {
  typedef short Short4 __attribute__((ext_vector_type(4)));
  typedef float Float4 __attribute__((ext_vector_type(4)));
  struct A { Short4 v; };
  struct B { Short4 v; };
  using Bt = B;
  struct Acc { Float4 v; };
  static __device__ __forceinline__ int lane() { return threadIdx.x % 64; }
  static __device__ __forceinline__ void loadA(A& a, const uint16_t* p, int ld) {
    for (int i = 0; i < 4; ++i) a.v[i] = static_cast<short>(p[(lane() % 16) * ld + 4 * (lane() / 16) + i]);
  }
  static __device__ __forceinline__ void loadBt(Bt& b, const uint16_t* p, int ld) {
    for (int i = 0; i < 4; ++i) b.v[i] = static_cast<short>(p[(lane() % 16) * ld + 4 * (lane() / 16) + i]);
  }
  static __device__ __forceinline__ void loadB(B& b, const uint16_t* p, int ld) {
    for (int i = 0; i < 4; ++i) b.v[i] = static_cast<short>(p[(4 * (lane() / 16) + i) * ld + lane() % 16]);
  }
  static __device__ __forceinline__ void zero(Acc& c) { c.v = Float4{0.0f, 0.0f, 0.0f, 0.0f}; }
  template <class Bop>
  static __device__ __forceinline__ void fma(Acc& c, const A& a, const Bop& b) {
#if defined(__HIP_DEVICE_COMPILE__) && \
    (defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__))
    if constexpr (kBf16) {
      c.v = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a.v, b.v, c.v, 0, 0, 0);
    } else {
      typedef _Float16 Half4 __attribute__((ext_vector_type(4)));
      c.v = __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(Half4, a.v),
                                                  __builtin_bit_cast(Half4, b.v), c.v, 0, 0, 0);
    }
#endif
  }
  static __device__ __forceinline__ void store(float* q, int ld, const Acc& c) {
    for (int i = 0; i < 4; ++i) q[(4 * (lane() / 16) + i) * ld + lane() % 16] = c.v[i];
  }
};
#else
// the emulator: every lane computes the whole tile from memory, in F32.
template <bool kBf16>
struct Tiles {
  struct Tile { float v[16][16]; };
  using A = Tile;
  using B = Tile;
  using Bt = Tile;
  using Acc = Tile;
  static float word(uint16_t h) { return kBf16 ? bf16BitsToFloat(h) : halfBitsToFloat(h); }
  static void loadA(A& a, const uint16_t* p, int ld) {
    for (int r = 0; r < 16; ++r) {
      for (int c = 0; c < 16; ++c) a.v[r][c] = word(p[r * ld + c]);
    }
  }
  static void loadBt(Bt& b, const uint16_t* p, int ld) {
    for (int k = 0; k < 16; ++k) {
      for (int n = 0; n < 16; ++n) b.v[k][n] = word(p[n * ld + k]);
    }
  }
  static void loadB(B& b, const uint16_t* p, int ld) {
    for (int k = 0; k < 16; ++k) {
      for (int n = 0; n < 16; ++n) b.v[k][n] = word(p[k * ld + n]);
    }
  }
  static void zero(Acc& c) {
    for (auto& row : c.v) {
      for (float& x : row) x = 0.0f;
    }
  }
  static void fma(Acc& c, const A& a, const Tile& b) {
    for (int r = 0; r < 16; ++r) {
      for (int n = 0; n < 16; ++n) {
        float sum = c.v[r][n];
        for (int k = 0; k < 16; ++k) sum += a.v[r][k] * b.v[k][n];
        c.v[r][n] = sum;
      }
    }
  }
  static void store(float* q, int ld, const Acc& c) {
    for (int r = 0; r < 16; ++r) {
      for (int n = 0; n < 16; ++n) q[r * ld + n] = c.v[r][n];
    }
  }
};
#endif

}  // namespace tandem::gpu::mma

namespace tandem::gpu {

// the wave size of the device kernels launch on, for grid shapes on the host.
inline int hostWarpSize() {
#if defined(TANDEM_GPU_EMU)
  return ::tandem::emu::configuredWarpSize();
#else
  // per thread: the device a thread launches on is its current one (the
  // backend binds it before each op)
  thread_local int device = -1, size = 64;
  int current = 0;
  if (hipGetDevice(&current) != hipSuccess) return size;
  if (current != device) {
    hipDeviceProp_t p;
    size = hipGetDeviceProperties(&p, current) == hipSuccess ? p.warpSize : 64;
    device = current;
  }
  return size;
#endif
}

// multiprocessors (CUs / SMs) of the current device, for grid shapes that
// must fill it; cached per thread and device as hostWarpSize().
inline int hostMultiprocessors() {
  thread_local int device = -1, count = 1;
  int current = 0;
  if (hipGetDevice(&current) != hipSuccess) return count;
  if (current != device) {
    hipDeviceProp_t p;
    count = hipGetDeviceProperties(&p, current) == hipSuccess ? p.multiProcessorCount : 1;
    device = current;
  }
  return count;
}

// whether the current device runs gpu::mma::Tiles: NVIDIA (this build is
// for sm_80+), CDNA (waves of 64: the builds are for gfx90a/gfx94x), the
// emulator.
inline bool hasMatrixTiles() {
#if defined(TANDEM_GPU_AMD)
  return hostWarpSize() == 64;
#else
  return true;
#endif
}

// what went wrong: the runtime's name for `e`, and on the emulator why the
// kernel failed (which thread, which barrier or shared array).
inline std::string errorMessage(hipError_t e) {
  std::string msg = hipGetErrorString(e);
#if defined(TANDEM_GPU_EMU)
  const std::string why = ::tandem::emu::lastFailure();
  if (e != hipSuccess && !why.empty()) msg += ": " + why;
#endif
  return msg;
}

// an executable graph of a captured stream (hipGraphInstantiate, whose
// signature differs between HIP and CUDA 12+).
inline hipError_t graphInstantiate(hipGraphExec_t* exec, hipGraph_t graph) {
#if defined(TANDEM_GPU_NVIDIA)
  return cudaGraphInstantiate(exec, graph, 0);
#else
  return hipGraphInstantiate(exec, graph, nullptr, nullptr, 0);
#endif
}

// kernel<<<grid, block, 0, stream>>>(args...); returns the launch error.
// `name` names the kernel in the emulator's failure messages.
template <class... Params, class... Args>
hipError_t launch(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block,
                  hipStream_t stream, Args... args) {
#if defined(TANDEM_GPU_EMU)
  return ::tandem::emu::launchKernel(name, kernel, grid, block, stream, args...);
#else
  // clang-format off
  kernel<<<grid, block, 0, stream>>>(static_cast<Params>(args)...);
  // clang-format on
  return hipGetLastError();
#endif
}

}  // namespace tandem::gpu
