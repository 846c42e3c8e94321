// How many rows of x a matmul may have to take the decode GEMVs (gemv.h,
// gemv_quant.h); more rows go to a GEMM. Free of vendor headers, for host
// code that must know which path a matmul takes (tests, the GPU check).
#pragma once

namespace tandem::kernels::hip {

inline constexpr int kGemvMaxRows = 8;

}  // namespace tandem::kernels::hip
