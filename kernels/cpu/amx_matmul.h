// The AMX-BF16 prefill matmul, for processors that have it (Intel Sapphire
// Rapids and later). Detection (CPUID AMX-TILE + AMX-BF16 + AVX512-BF16,
// the OS enabling the tile state in XCR0, and Linux's
// arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) permission) runs once;
// the cpu backend sends a matmul here only when it said yes. amx_matmul.cc
// (baseline flags) detects and splits the work into tasks; the tile kernel
// lives in kernels_amx.cc, the one file compiled with -mamx-tile -mamx-bf16.
#pragma once

#include <cstdint>

#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/parallel_tasks.h"

namespace tandem::kernels::cpu {

// true when this processor and kernel can run AMX-BF16 tile instructions in
// this process (asks the kernel's permission on the first call). The
// environment variable TANDEM_CPU_AMX=0 (or off) turns it off.
bool amxBf16Usable();

// whether a matmul with these arguments goes to amxMatmul: AMX is usable,
// the matmul is a prefill one (m of kAmxMinRows and more) and w is F32,
// BF16 or F16, whose values the split operands carry exactly
// (kernels_amx.cc), or block-quantized (Q8_0, Q4_0, Q4_K, Q6_K: dequantized
// per panel, each value kept to 16 of its at most 19 significant bits, far
// finer than the integer dots' 8-bit activations it replaces; k a whole
// number of blocks).
constexpr int64_t kAmxMinRows = 32;
bool useAmxMatmul(const MatmulArgs& args);

// y = x * w^T + bias on the tiles, as one job: x split into BF16 parts
// once (the tasks share it), then each task packs its 32-row panels of w
// once and runs every block of x rows against them. x and w as
// kernels_amx.cc describes (x to 24 significant bits, w exactly or, when
// dequantized from blocks, to 16; F32 accumulation).
// Only call when amxBf16Usable().
void amxMatmul(const MatmulArgs& args, int threads, const ParallelTasks& parallel);

// The tile kernel's entry points (kernels_amx.cc), for amxMatmul.
// x is split into kAmxXParts BF16 parts, each stored as A tiles: 32 values
// of row r from k block kb (k in [32 kb, 32 kb + 32)) at amxTileOffset(r,
// kb, kp / 32) of its part, so each tile (16 rows of one k block) is 1 KB in
// one piece. Buffers from 64-byte boundaries (a tile row across two cache
// lines loads both).
inline constexpr int kAmxXParts = 3;
inline int64_t amxTileOffset(int64_t r, int64_t kb, int64_t kb_count) {
  return ((r / 16 * kb_count + kb) * 16 + r % 16) * 32;
}
// rows [begin, end) of x (m rows of k) as its parts, part i at parts + i *
// part_stride (kp: k rounded up to 32); rows at or past m and columns at or
// past k are zeros.
void amxSplitRows(const float* x, int64_t m, int64_t k, int64_t kp, int64_t begin, int64_t end, uint16_t* parts,
                  int64_t part_stride);
// y[:, n_begin:n_end) from the split x, whose rows run to m rounded up to 32.
void amxPanels(const MatmulArgs& args, const uint16_t* x_parts, int64_t part_stride, int64_t kp, int64_t n_begin,
               int64_t n_end);

// rows [n0, n0 + rows) of a block-quantized w (args.w_dtype) as F32 rows
// of args.k values at out: for the kernel's packing, here because this file
// has the baseline flags the block formats' code is built with.
void amxDequantizeRows(const MatmulArgs& args, int64_t n0, int rows, float* out);

// whether this build compiled the tile kernel (a compiler without AMX
// support builds an empty one, and amxBf16Usable() then says no).
bool amxKernelBuilt();

}  // namespace tandem::kernels::cpu
