// Mixture-of-experts routing on the host, shared by the backends whose
// device is the host (cpu, reference): the top-k selection of
// Backend::moeRoute with llama.cpp's arithmetic, and the grouping of a
// batch's (token, choice) pairs by expert that moeExperts runs on.
#pragma once

#include <cstdint>
#include <vector>

namespace tandem::kernels {

// row t of logits [rows, experts]: p = softmax (exp(l - max) in F32, the sum
// in double, p scaled by the F32 reciprocal, as ggml_soft_max), the k largest
// p in descending order (equal: the lower id first) into ids[t * k ..], their
// p into weights[t * k ..], divided by their sum (in double, at least
// 2^-14 as llama.cpp clamps it) when `normalize`.
void routeTopK(const float* logits, int64_t rows, int experts, int k, bool normalize, int32_t* ids,
               float* weights);

// a batch's choices by expert: choice c = t * k + j (token t's j-th expert).
struct ExpertGroups {
  std::vector<int32_t> offsets;    // [experts + 1]: expert e's choices are order[offsets[e] .. offsets[e + 1])
  std::vector<int32_t> order;      // [rows * k]: choices sorted by expert, then by c
  std::vector<int32_t> position;   // [rows * k]: where choice c sits in order
  std::vector<int32_t> active;     // the experts with at least one choice, ascending
};
// TANDEM_CHECKs every id in [0, experts).
ExpertGroups groupByExpert(const int32_t* ids, int64_t rows, int k, int experts);

}  // namespace tandem::kernels
