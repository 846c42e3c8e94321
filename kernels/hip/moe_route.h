// Mixture-of-experts routing on the device: the top-k of each token's
// router probabilities (Backend::moeRoute), and the batch's choices grouped
// by expert for the grouped matmuls (moe_experts.h). Both run entirely on
// the device from shapes the host knows, so a decode step that uses them
// can be captured into a graph (no host sync, no data-dependent launch).
#pragma once

#include <cstdint>

#include "kernels/hip/gpu_vendor.h"

namespace tandem::kernels::hip {

// logits [rows, experts] F32 -> ids [rows, k] I32, weights [rows, k] F32:
// the k largest softmax probabilities in descending order (equal: the lower
// expert first), renormalized when `normalize`, with the host's arithmetic
// (kernels/moe_routing.h: the sum in double, clamped at 2^-14).
hipError_t launchMoeRoute(const float* logits, int64_t rows, int experts, int k, bool normalize,
                          int32_t* ids, float* weights, hipStream_t stream);

// the choices c = t * k + j of ids [rows, k] grouped by expert, into
// `groups` (moeGroupsInts(rows * k, experts) ints), laid out as
// MoeGroups says. Ids outside [0, experts) are dropped (counted nowhere).
struct MoeGroups {
  int32_t* offsets;   // [experts + 1]: expert e's choices sit at positions [offsets[e], offsets[e + 1])
  int32_t* order;     // [n]: the choice at each position (by expert, then by c)
  int32_t* position;  // [n]: the position of choice c (-1 when dropped)
  int32_t* token;     // [n]: the token (row of x) of the choice at each position
  int32_t* active;    // [experts]: the chosen experts ascending, then -1
};
int64_t moeGroupsInts(int64_t n, int experts);
MoeGroups moeGroupsAt(int32_t* base, int64_t n, int experts);
hipError_t launchMoeGroup(const int32_t* ids, int64_t rows, int k, int experts, MoeGroups groups,
                          hipStream_t stream);

}  // namespace tandem::kernels::hip
