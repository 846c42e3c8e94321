// Logit helpers for sampling on the device, so only a token (greedy) or k
// candidates per row travel to the host: the greedy pick with its
// log-probability, softmax with temperature, top-k (values and ids, best
// first, ties to the lower id), and the top-p cut over sorted probabilities.
#pragma once

#include <cstdint>

#include "kernels/hip/gpu_vendor.h"

namespace tandem::kernels::hip {

// ids[r] = the first maximum of row r of x [rows, cols] F32 (a NaN never
// wins except in column 0, as std::max_element), logprobs[r] = its
// log-probability under the row (x - max - log(sum exp(x - max)), float
// sums).
hipError_t launchGreedy(const float* x, int64_t rows, int64_t cols, int32_t* ids, float* logprobs,
                        hipStream_t stream);

// out[r, :] = softmax(x[r, :] / temperature); x, out [rows, cols] F32 (may
// alias); temperature > 0.
hipError_t launchSoftmax(const float* x, int64_t rows, int64_t cols, float temperature, float* out,
                         hipStream_t stream);

// the k largest values of each row of x [rows, cols] in descending order:
// values [rows, k] F32, ids [rows, k] I32; 1 <= k <= cols.
hipError_t launchTopK(const float* x, int64_t rows, int64_t cols, int k, float* values,
                      int32_t* ids, hipStream_t stream);

// for probabilities sorted descending ([rows, k]), keep[r] = the length of
// the shortest prefix whose sum reaches top_p (at least 1, at most k).
hipError_t launchTopP(const float* sorted_probs, int64_t rows, int k, float top_p, int32_t* keep,
                      hipStream_t stream);

}  // namespace tandem::kernels::hip
