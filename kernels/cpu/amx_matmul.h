// The AMX-BF16 prefill matmul, for processors that have it (Intel Sapphire
// Rapids and later). Detection (CPUID AMX-TILE + AMX-BF16, the OS enabling
// the tile state in XCR0, and Linux's arch_prctl(ARCH_REQ_XCOMP_PERM,
// XFEATURE_XTILEDATA) permission) runs once; the AVX-512 kernel table sends
// a matmul here only when it said yes. The kernel itself lives in
// kernels_amx.cc, the one file compiled with -mamx-tile -mamx-bf16.
#pragma once

#include <cstdint>

#include "kernels/cpu/kernel_table.h"

namespace tandem::kernels::cpu {

// true when this processor and kernel can run AMX-BF16 tile instructions in
// this process (asks the kernel's permission on the first call). The
// environment variable TANDEM_CPU_AMX=0 turns it off.
bool amxBf16Usable();

// whether a matmul with these arguments goes to amxMatmul: AMX is usable,
// the matmul is a prefill one (m of kAmxMinRows and more) and w is BF16,
// whose values AMX multiplies exactly. F16/F32 weights would be rounded to
// BF16, beyond the other paths' tolerance, so they go there only with
// TANDEM_CPU_AMX=all.
constexpr int64_t kAmxMinRows = 32;
bool useAmxMatmul(const MatmulArgs& args);

// y[:, n_begin:n_end) of y = x * w^T + bias with x rounded to BF16 and w
// converted to BF16 (exact for BF16 w), products accumulated in F32.
// n_begin should sit on a multiple of 32 rows for full tiles (any is
// correct). Only call when amxBf16Usable().
void amxMatmul(const MatmulArgs& args, int64_t n_begin, int64_t n_end);

// whether this build compiled the tile kernel (a compiler without AMX
// support builds an empty one, and amxBf16Usable() then says no).
bool amxKernelBuilt();

}  // namespace tandem::kernels::cpu
