#include "kernels/hip/moe_route.h"

#include "kernels/hip/device_utils.h"

namespace tandem::kernels::hip {

namespace {

constexpr int kRouteThreads = 64;

// one thread a token: a router has tens to hundreds of experts and k is
// small, so a serial top-k per thread is cheap and keeps the host's order
// of operations exactly.
static __global__ void moeRouteKernel(const float* logits, int64_t rows, int experts, int k,
                                      bool normalize, int32_t* ids, float* weights) {
  const int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= rows) return;
  const float* l = logits + t * experts;
  float max = l[0];
  for (int e = 1; e < experts; ++e) max = l[e] > max ? l[e] : max;
  double sum = 0.0;
  for (int e = 0; e < experts; ++e) sum += static_cast<double>(expf(l[e] - max));
  const float inv = static_cast<float>(1.0 / sum);
  // k rounds of the largest probability not yet taken (ties: lower id)
  float prev = 0.0f;
  int prev_id = -1;
  double chosen = 0.0;
  for (int j = 0; j < k; ++j) {
    float best = -1.0f;
    int best_id = -1;
    for (int e = 0; e < experts; ++e) {
      const float p = expf(l[e] - max) * inv;
      // after (prev, prev_id) in the order: smaller p, or equal p and a larger id
      const bool after = prev_id < 0 || p < prev || (p == prev && e > prev_id);
      if (after && p > best) {
        best = p;
        best_id = e;
      }
    }
    ids[t * k + j] = best_id;
    weights[t * k + j] = best;
    chosen += static_cast<double>(best);
    prev = best;
    prev_id = best_id;
  }
  if (!normalize) return;
  float denom = static_cast<float>(chosen);
  denom = denom > 6.103515625e-5f ? denom : 6.103515625e-5f;
  for (int j = 0; j < k; ++j) weights[t * k + j] = weights[t * k + j] / denom;
}

// one thread: a decode batch has at most a few hundred choices and a
// prefill chunk a few thousand; a serial pass keeps the order within an
// expert that of the choices, as the host's grouping.
static __global__ void moeGroupKernel(const int32_t* ids, int64_t n, int k, int experts, MoeGroups g) {
  if (threadIdx.x != 0) return;
  for (int e = 0; e <= experts; ++e) g.offsets[e] = 0;
  for (int64_t c = 0; c < n; ++c) {
    const int32_t e = ids[c];
    if (e >= 0 && e < experts) ++g.offsets[e + 1];
  }
  int active = 0;
  for (int e = 0; e < experts; ++e) {
    if (g.offsets[e + 1] > 0) g.active[active++] = e;
    g.offsets[e + 1] += g.offsets[e];
  }
  for (int e = active; e < experts; ++e) g.active[e] = -1;
  // fill: offsets[e] walks up to offsets[e + 1]; restored after
  for (int64_t c = 0; c < n; ++c) {
    const int32_t e = ids[c];
    if (e < 0 || e >= experts) {
      g.position[c] = -1;
      continue;
    }
    const int32_t p = g.offsets[e]++;
    g.order[p] = static_cast<int32_t>(c);
    g.position[c] = p;
    g.token[p] = static_cast<int32_t>(c / k);
  }
  for (int e = experts; e > 0; --e) g.offsets[e] = g.offsets[e - 1];
  g.offsets[0] = 0;
}

}  // namespace

hipError_t launchMoeRoute(const float* logits, int64_t rows, int experts, int k, bool normalize,
                          int32_t* ids, float* weights, hipStream_t stream) {
  if (experts < 1 || k < 1 || k > experts) return hipErrorInvalidValue;
  if (rows == 0) return hipSuccess;
  const dim3 grid(static_cast<unsigned>((rows + kRouteThreads - 1) / kRouteThreads));
  return gpu::launch("moe_route", moeRouteKernel, grid, dim3(kRouteThreads), stream, logits, rows,
                     experts, k, normalize, ids, weights);
}

int64_t moeGroupsInts(int64_t n, int experts) { return (experts + 1) + 3 * n + experts; }

MoeGroups moeGroupsAt(int32_t* base, int64_t n, int experts) {
  MoeGroups g;
  g.offsets = base;
  g.order = g.offsets + experts + 1;
  g.position = g.order + n;
  g.token = g.position + n;
  g.active = g.token + n;
  return g;
}

hipError_t launchMoeGroup(const int32_t* ids, int64_t rows, int k, int experts, MoeGroups groups,
                          hipStream_t stream) {
  if (experts < 1 || k < 1) return hipErrorInvalidValue;
  return gpu::launch("moe_group", moeGroupKernel, dim3(1), dim3(1), stream, ids, rows * k, k,
                     experts, groups);
}

}  // namespace tandem::kernels::hip
