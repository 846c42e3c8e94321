// The grouped matmuls of a mixture of experts (Backend::moeExperts) and the
// weighted sum of each token's choices. One launch covers every chosen
// expert: block (s, b) takes the s-th chosen expert (MoeGroups::active)
// and its weight rows [b * R, (b + 1) * R), and runs them against every row
// of x that chose that expert, a few rows at a time, so each weight is read
// once for all of them (decode: only the chosen experts' weights are read;
// a batch's tokens that chose one expert share the reads). The grid is
// sized by what the host knows (min(choices, experts) slots), blocks of a
// slot no expert took return at once: capturable in a graph.
#pragma once

#include <cstdint>

#include "common/dtype.h"
#include "kernels/hip/gpu_vendor.h"
#include "kernels/hip/moe_route.h"
#include "kernels/hip/quant_dot_device.h"

namespace tandem::kernels::hip {

// y[p] = x[x_rows[p]] * W_e^T for every position p of each chosen expert e
// (x_rows null: x[p]); w stacked [experts * n, k] of F32/F16/BF16, y [*, n]
// F32 at positions. `slots`: min(choices, experts).
hipError_t launchMoeMatmul(const float* x, const int32_t* x_rows, const void* w, DType w_dtype,
                           MoeGroups groups, int slots, float* y, int64_t n, int64_t k,
                           hipStream_t stream);
// the same with a quantized w and x quantized by launchQuantizeActQ8 (for
// w's activation group) into acts.
hipError_t launchMoeMatmulQuant(const gpu::ActQ8* acts, const int32_t* x_rows, const void* w,
                                DType w_dtype, MoeGroups groups, int slots, float* y, int64_t n,
                                int64_t k, hipStream_t stream);
// out[t] = sum over j of weights[t, j] * down[position[t * k + j]], in j
// order. down [*, h], out [rows, h] F32.
hipError_t launchMoeCombine(const float* down, const int32_t* position, const float* weights,
                            int64_t rows, int k, int64_t h, float* out, hipStream_t stream);

}  // namespace tandem::kernels::hip
