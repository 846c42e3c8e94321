// The issue rate of the integer dot-product instructions the quantized dots
// are built from, measured on this core: back-to-back independent chains,
// nothing loaded, so the quant_dot_bench lines have a physical roof of the
// same run to be a fraction of (and a 16-sequence decode a bound, its MACs
// per token over the cores' roof).
#pragma once

namespace tandem::bench {

// GMAC/s of one thread, best of `reps` timed loops; 0 where the CPU (or
// the build, off x86) lacks the instruction.
double roofVpdpbusdYmm(int reps);   // AVX-VNNI: 32 u8 x s8 MACs an instruction
double roofVpdpbusdZmm(int reps);   // AVX512-VNNI: 64
double roofMaddubsYmm(int reps);    // AVX2: maddubs (32 MACs) + an int16 add

}  // namespace tandem::bench
