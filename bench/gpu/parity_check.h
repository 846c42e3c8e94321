// `tandem_gpu_check parity`: the hip backend's ops against the reference
// backend (kernels/reference, sums in double on the host), on the device
// at hand: embedding, rmsNorm, matmul (the gemv path m <= 8 and the tiled
// gemm, every weight dtype, with and without bias), rope (both layouts,
// llama3 scaling), siluMul, add, gatherRows, writeKv (bit-exact) and
// pagedAttention (prefill chunks after cached prefixes and decode steps,
// F32/F16/BF16 caches, grouped-query heads). The cases follow
// tests/kernels/backend_parity_test.cc (odd shapes, tile edges) without its
// test framework; the tolerances are that suite's hip tolerances.
#pragma once

#include <string>
#include <vector>

#include "kernels/hip/hip_backend.h"

namespace tandem::bench::gpu {

struct ParityResult {
  std::string name;        // e.g. "matmul_bf16_70x130x67_bias"
  double max_rel_error = 0;
  double tolerance = 0;
  std::string error;       // a kernel error or a bit-exact mismatch; empty if none
  bool pass() const { return error.empty() && max_rel_error <= tolerance; }
};

// `large` adds cases of Llama-3-8B's widths (4096, GQA 32:8, head_dim 128);
// they take minutes on the host emulator.
std::vector<ParityResult> runParity(kernels::hip::HipBackend& backend, bool large);

}  // namespace tandem::bench::gpu
