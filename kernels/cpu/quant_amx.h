// AMX-INT8 for the batch dots of Q4_K and Q8_0 weights (batched decode, up
// to kQuantDotMaxRows rows of x): the VPDPBUSD dots run at that
// instruction's throughput (bench/RESULTS.md, session 32), a tile product
// is 16 x 16 x 32 multiply-adds at once. The weight is the A operand (16
// weight rows of a 32-value (sub-)block: Q4_K's nibbles unpacked to bytes,
// Q8_0's blocks loaded in place, the rows a weight row's bytes apart), x
// the B one (its rows quantized as for the dots, then laid out once per
// call in the tiles' VNNI order), so each (sub-)block's int32 tile row
// belongs to one weight row and takes that row's scale as one broadcast.
// Integer sums as the dots'; the float steps in another order (not bit for
// bit the dots'). Q4_K: 16-row batches +8%, 12-row +18% over the dots on
// an Intel Xeon, far below the tiles' arithmetic; what stalls it
// (sampled): the tile loads of just-unpacked weights, and the 16 weight
// rows' streams (the next group's rows are prefetched; without that it is
// slower than the dots). Q8_0: +30% at 16 rows (session 34). Q6_K and Q4_0
// weights stay on the dots.
// quant_amx_kernel.cc is the one file compiled with -mamx-int8.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/quant_dot.h"

namespace tandem::kernels::cpu {

// the fewest rows of x a batch takes the tiles with (below, the dots):
// measured on an Intel Xeon (2 threads, batch aggregate against the dots).
// Q4_K (Q4_K_M): 4 rows -20%, 8 even, 12 +18%, 16 +8% (bench/RESULTS.md,
// session 32). Q8_0: 4 rows -10%, 6 +4%, 7 +11%, 8 +5-14%, 12 +27%, 16
// +30% (session 34): no unpacking, its tiles load the blocks in place.
inline constexpr int64_t kAmxInt8MinRows = 10;
inline constexpr int64_t kAmxInt8Q8_0MinRows = 6;

// true when this processor and kernel can run AMX-INT8 tile instructions in
// this process (amx_matmul.h's checks, plus CPUID AMX-INT8).
bool amxInt8Usable();

// x (m <= 16 rows of k values, quantized by `table` to 256-value blocks) as
// the tiles take it, per 256-block i and 32-value sub-block j: b, 512
// bytes at (i * 8 + j) * 512, byte 64 p + 4 r + q = value 32 j + 4 p + q
// of row r (zeros past m); dx[i * 16 + r], the block's scale; xs[(i * 8 +
// j) * 16 + r], the sub-block's sum of quantized values. A view of
// amxQ4KActivations' storage.
struct AmxQ4KActivations {
  int m = 0;
  int64_t blocks = 0;
  const int8_t* b = nullptr;
  const float* dx = nullptr;
  const float* xs = nullptr;
};
AmxQ4KActivations amxQ4KActivations(const QuantDotTable& table, const ActBlock256* x, int m, int64_t blocks,
                                    std::vector<int8_t>* bytes, std::vector<float>* floats);

// y[r][j] (+ bias) for r < x.m, weight rows j in [n_begin, n_end) of a Q4_K
// weight (args.w, args.k = 256 * x.blocks). Only call when amxInt8Usable().
void amxQ4KRows(const MatmulArgs& args, const AmxQ4KActivations& x, int64_t n_begin, int64_t n_end);

// x (m <= 16 rows of k values, quantized by `table` to 32-value blocks) as
// the Q8_0 tiles take it, per block i: b, 512 bytes at i * 512, byte 64 p
// + 4 r + q = value 4 p + q of row r as a signed byte (the table's offset
// taken out; zeros past m); dx[i * 16 + r], the block's scale.
struct AmxQ8_0Activations {
  int m = 0;
  int64_t blocks = 0;
  const int8_t* b = nullptr;
  const float* dx = nullptr;
};
AmxQ8_0Activations amxQ8_0Activations(const QuantDotTable& table, const ActBlock32* x, int m, int64_t blocks,
                                      std::vector<int8_t>* bytes, std::vector<float>* floats);

// y[r][j] (+ bias) for r < x.m, weight rows j in [n_begin, n_end) of a Q8_0
// weight (args.w, args.k = 32 * x.blocks). Only call when amxInt8Usable().
void amxQ8_0Rows(const MatmulArgs& args, const AmxQ8_0Activations& x, int64_t n_begin, int64_t n_end);

// whether this build compiled the kernel.
bool amxInt8KernelBuilt();

}  // namespace tandem::kernels::cpu
