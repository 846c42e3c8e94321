// The inner loops of the cpu backend, one table per instruction set. The
// backend splits each op into tasks and calls these on each task's range;
// kernels_{scalar,avx2,avx512}.cc instantiate kernel_templates.h with their
// vector type, each compiled with its own -m flags.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/dtype.h"
#include "kernels/cpu/simd_level.h"

namespace tandem::kernels::cpu {

struct MatmulArgs {
  const float* x = nullptr;  // [m, k]
  const void* w = nullptr;   // [n, k] of w_dtype
  DType w_dtype = DType::kF32;
  const float* bias = nullptr;  // [n] or null
  float* y = nullptr;           // [m, n]
  int64_t m = 0, n = 0, k = 0;
};

// one (sequence, kv head, query range) of paged attention.
struct AttendArgs {
  const float* q = nullptr;  // row of the sequence's first query, head 0
  float* out = nullptr;      // same indexing as q
  int64_t row_stride = 0;    // floats between query rows of q and out
  int first_head = 0;        // query heads [first_head, first_head + group)
  int group = 1;
  int head_dim = 0;
  int q_begin = 0, q_end = 0;  // query indices inside the chunk
  int start_pos = 0;           // position of query 0
  const int32_t* table = nullptr;
  const char* cache = nullptr;
  size_t block_bytes = 0;
  size_t k_offset = 0, v_offset = 0;  // slice offsets of the layer in a block
  int block_size = 0;
  int64_t kv_row = 0;  // elements between slots (kv_heads * head_dim)
  int kv_head = 0;
  DType kv_dtype = DType::kF32;
  float scale = 0.0f;
};

struct KernelTable {
  SimdLevel level;
  // y[:, n_begin:n_end] of y = x * w^T + bias.
  void (*matmul)(const MatmulArgs& args, int64_t n_begin, int64_t n_end);
  // rmsnorm of `rows` rows of length d; weight [d] of w_dtype.
  void (*rmsNorm)(const float* x, const void* w, DType w_dtype, int64_t d, float eps,
                  float* out, int64_t rows);
  void (*siluMul)(const float* gate, const float* up, float* out, int64_t n);
  void (*add)(const float* a, const float* b, float* out, int64_t n);
  // dst[i] = src[i] converted from F32/F16/BF16 to F32.
  void (*toF32)(const void* src, DType dtype, float* dst, int64_t n);
  // dst[i] = src[i] converted from F32 to F32/F16/BF16, rounded to nearest
  // even (common/dtype.h's f32ToF16 and f32ToBf16, bit for bit); e.g. new
  // keys and values into an F16 KV cache.
  void (*fromF32)(const float* src, DType dtype, void* dst, int64_t n);
  void (*attend)(const AttendArgs& args);
};

// per-thread scratch of at least `floats` floats, one area per slot (0..3),
// valid until the next call with the same slot on the same thread. Defined
// in a file built with baseline flags: std containers instantiated inside
// the -mavx512f files could be picked by the linker for every other file.
float* threadScratch(int slot, size_t floats);

const KernelTable& scalarKernels();
const KernelTable& avx2Kernels();
const KernelTable& avx512Kernels();
// the AVX-512 table with 16-bit weights widened as two 256-bit halves
// joined (`joined_halves`: the faster form where the core splits 512-bit
// operations, processorSplits512BitOps()) or by one 512-bit conversion (the
// faster one on Intel); avx512Kernels() picks for this processor, tests
// take both.
const KernelTable& avx512KernelsWidening(bool joined_halves);

}  // namespace tandem::kernels::cpu
