// AMX-INT8 for the batch dots of Q4_K, Q6_K and Q8_0 weights (batched
// decode, up to kQuantDotMaxRows rows of x): the VPDPBUSD dots run at that
// instruction's throughput (quant_dot_bench's roof line beside its dots;
// bench/RESULTS.md "the whole table on the Intel Xeon with AMX"), a tile
// product is 16 x 16 x 32 multiply-adds at once. The weight is the A operand (16
// weight rows of a 32- or 16-value (sub-)block: Q4_K's nibbles unpacked to
// bytes, Q6_K's values less 32 as signed bytes, Q8_0's blocks loaded in
// place, the rows a weight row's bytes apart), x the B one (its rows
// quantized as for the dots, then laid out once per call in the tiles'
// VNNI order), so each (sub-)block's int32 tile row belongs to one weight
// row and takes that row's scale as one broadcast. Integer sums as the
// dots'; the float steps in another order (not bit for bit the dots').
// The float scaling of each (sub-)block's tile, not the tile products, bounds
// the kernels. 16-row batches on an Intel Xeon, weights past L2
// (quant_dot_bench --k 2048 --weights 2048): Q4_K 2.8x the dots, Q6_K 2.2x,
// Q8_0 2.3x (bench/RESULTS.md "rows of y stored whole; AMX-INT8 for Q6_K").
// Q4_0 weights stay on the dots.
// quant_amx_kernel.cc is the one file compiled with -mamx-int8.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/quant_dot.h"

namespace tandem::kernels::cpu {

// the fewest rows of x a batch takes the tiles with (below, the dots): measured
// on an Intel Xeon against the dots (quant_dot_bench --rows R, one thread;
// bench/RESULTS.md "rows of y stored whole; AMX-INT8 for Q6_K"). Q4_K: 6 rows
// +13%, 8 +35%. Q6_K: 6 rows -8%, 8 +8%. Q8_0: 4 rows -10%, 6 +4%, 7 +11% (the
// model's batch aggregate, model_runner_bench --tests batch; bench/RESULTS.md
// "AMX-INT8 for Q8_0 batches"): no unpacking, its tiles load the blocks in
// place.
inline constexpr int64_t kAmxInt8Q4KMinRows = 6;
inline constexpr int64_t kAmxInt8Q8_0MinRows = 6;
inline constexpr int64_t kAmxInt8Q6KMinRows = 8;

// true when this processor and kernel can run AMX-INT8 tile instructions in
// this process (amx_matmul.h's checks, plus CPUID AMX-INT8).
bool amxInt8Usable();

// x (m <= 16 rows of k values, quantized by `table` to 256-value blocks) as
// the Q4_K and Q6_K tiles take it (a Q6_K 16-value sub-block's tile is half
// a Q4_K sub-block's), per 256-block i and 32-value sub-block j: b, 512
// bytes at (i * 8 + j) * 512, byte 64 p + 4 r + q = value 32 j + 4 p + q
// of row r (zeros past m); dx[i * 16 + r], the block's scale; xs[(i * 8 +
// j) * 16 + r], the sub-block's sum of quantized values. A view of
// amxBlock256Activations' storage.
struct AmxBlock256Activations {
  int m = 0;
  int64_t blocks = 0;
  const int8_t* b = nullptr;
  const float* dx = nullptr;
  const float* xs = nullptr;
};
AmxBlock256Activations amxBlock256Activations(const QuantDotTable& table, const ActBlock256* x, int m,
                                              int64_t blocks, std::vector<int8_t>* bytes, std::vector<float>* floats);

// y[r][j] (+ bias) for r < x.m, weight rows j in [n_begin, n_end) of a Q4_K
// weight (args.w, args.k = 256 * x.blocks). Only call when amxInt8Usable().
void amxQ4KRows(const MatmulArgs& args, const AmxBlock256Activations& x, int64_t n_begin, int64_t n_end);

// y[r][j] (+ bias) for r < x.m, weight rows j in [n_begin, n_end) of a Q6_K
// weight (args.w, args.k = 256 * x.blocks). Only call when amxInt8Usable().
void amxQ6KRows(const MatmulArgs& args, const AmxBlock256Activations& x, int64_t n_begin, int64_t n_end);

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
