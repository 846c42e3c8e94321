// y = x * w^T for a block-quantized w (q8_0, q4_0, q4_k, q6_k) on the cpu
// backend. Few rows of x (decode, small batches): x is quantized to 8-bit
// blocks once per call and each weight row is dotted in integers
// (quant_dot.h), read from memory once for all rows of x and each of its
// blocks unpacked once per dot call's rows of x (QuantDotTable::rows). Many rows
// (prefill): where the table's dots are the faster (QuantDotTable::prefill32,
// prefill256), the same dots, each task a panel of weight rows against
// every kQuantDotMaxRows rows of x in turn; else each task dequantizes a
// panel of weight rows to F32 once and runs the dense F32 kernel on it, so
// a panel's conversion is shared by every row of x.
#pragma once

#include <cstdint>
#include <span>

#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/parallel_tasks.h"

namespace tandem::kernels::cpu {

// rows of x up to which the integer-dot path runs as one job; above it,
// prefill (the dots a group of this many rows at a time, or dequantized
// panels and the dense gemm).
inline constexpr int64_t kQuantDotMaxRows = 16;

// args.w_dtype must be quantized and args.k a multiple of its block size.
// `dense` supplies the F32 kernels (and the simd level of the dot table);
// `amx`: whether a batch (up to kQuantDotMaxRows rows) of a Q4_K, Q6_K or
// Q8_0 weight may run on the AMX-INT8 tiles where the processor has them
// at the avx512 level (quant_amx.h); `threads` sizes the task split.
void quantMatmul(const MatmulArgs& args, const KernelTable& dense, bool amx, int threads,
                 const ParallelTasks& parallel);

struct QuantDotTable;

// for matmuls whose x differ (a mixture's experts, each its own rows): x's
// rows quantized once by the caller, then any weight rows of any of them.
// The bytes m rows of k activations take quantized for a weight of dtype w;
// rows [begin, end) of x (k values a row) quantized by `dots` into `out`
// (row r at its offset); and weight rows [begin, end) of y = x * w^T (+
// bias) for args.w quantized and x already quantized by `dots` at xq, any
// args.m (the dots kQuantDotMaxRows rows of x at a time, as prefill's).
size_t quantizedActivationBytes(DType w, int64_t m, int64_t k);
void quantizeActivations(const QuantDotTable& dots, DType w, const float* x, int64_t k, int64_t begin,
                         int64_t end, void* out);
void quantMatmulRowsQuantized(const MatmulArgs& args, const QuantDotTable& dots, const void* xq,
                              int64_t begin, int64_t end);

// true when quantMatmulGroup takes `group`: weights that share x (the same
// x, m and k), at most kQuantDotMaxRows rows of x, all quantized to blocks
// whose activations are quantized alike (q8_0/q4_0, or the k-quants).
bool canGroupQuantMatmuls(std::span<const MatmulArgs> group);

// each args' y as quantMatmul computes it (the same numbers), as one job: x
// is quantized once and the weights' rows are one list of tasks, so the
// threads wait for each other once (q, k and v; gate and up).
void quantMatmulGroup(std::span<const MatmulArgs> group, const KernelTable& dense, bool amx, int threads,
                      const ParallelTasks& parallel);

}  // namespace tandem::kernels::cpu
