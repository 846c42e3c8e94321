#include "kernels/hip/sampling.h"

#include "kernels/hip/device_utils.h"

namespace tandem::kernels::hip {

namespace {

constexpr int kThreads = 256;

// a before b in top-k order: larger value first, then lower id (a NaN is
// before nothing and nothing is before it).
__device__ __forceinline__ bool before(float av, int ai, float bv, int bi) {
  return av > bv || (av == bv && ai < bi);
}

// the best of every thread's candidate (bv, bi) in top-k order, returned in
// every thread. best_v, best_i: shared [kMaxWarps], free again on return.
template <class Values, class Ids>
__device__ __forceinline__ void blockBest(float& bv, int& bi, Values best_v, Ids best_i) {
  for (int offset = warpSize / 2; offset > 0; offset >>= 1) {
    const float ov = TANDEM_SHFL_XOR(bv, offset);
    const int oi = TANDEM_SHFL_XOR(bi, offset);
    if (before(ov, oi, bv, bi)) {
      bv = ov;
      bi = oi;
    }
  }
  if (threadIdx.x % warpSize == 0) {
    best_v[threadIdx.x / warpSize] = bv;
    best_i[threadIdx.x / warpSize] = bi;
  }
  __syncthreads();
  bv = best_v[0];
  bi = best_i[0];
  for (int w = 1; w < static_cast<int>(blockDim.x / warpSize); ++w) {
    if (before(best_v[w], best_i[w], bv, bi)) {
      bv = best_v[w];
      bi = best_i[w];
    }
  }
  __syncthreads();
}

// the first maximum of w[0, cols), as std::max_element: a NaN never wins
// except in column 0, where nothing compares above it. In every thread.
template <class Values, class Ids>
__device__ int firstMaximum(const float* w, int64_t cols, Values best_v, Ids best_i) {
  float bv = -INFINITY;
  int bi = 0x7fffffff;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    if (before(w[j], static_cast<int>(j), bv, bi)) {
      bv = w[j];
      bi = static_cast<int>(j);
    }
  }
  blockBest(bv, bi, best_v, best_i);
  return !(w[0] == w[0]) || bi == 0x7fffffff ? 0 : bi;  // NaN in column 0, or NaN only
}

static __global__ void greedyKernel(const float* x, int64_t cols, int32_t* ids, float* logprobs) {
  TANDEM_SHARED(float, best_v, [gpu::kMaxWarps]);
  TANDEM_SHARED(int, best_i, [gpu::kMaxWarps]);
  TANDEM_SHARED(float, scratch, [gpu::kMaxWarps]);
  const float* xr = x + blockIdx.x * cols;
  const int bi = firstMaximum(xr, cols, best_v, best_i);
  const float bv = xr[bi];
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) sum += expf(xr[j] - bv);
  sum = gpu::blockSum(sum, scratch);
  if (threadIdx.x == 0) {
    ids[blockIdx.x] = bi;
    logprobs[blockIdx.x] = -logf(sum);
  }
}

// ---- the sampler (launchSampleRows) ----

// fixed-point probability masses for the top-p cut: integer sums do not
// depend on the order atomics land in. 2^44 keeps 152k tokens of mass <= 1
// below 2^62.
constexpr double kMassScale = 17592186044416.0;

// a float's bits as an unsigned key in the float's order (-inf lowest).
__device__ __forceinline__ uint32_t orderKey(float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  return (u & 0x80000000u) != 0 ? ~u : (u | 0x80000000u);
}

// exclusive prefix sum of each thread's v in thread order (Hillis-Steele
// over shared s [blockDim.x]); *total: the block's sum. Every thread calls it.
template <class T, class Shared>
__device__ T blockExclusiveScan(T v, Shared s, T* total) {
  const int tid = static_cast<int>(threadIdx.x), n = static_cast<int>(blockDim.x);
  s[tid] = v;
  __syncthreads();
  for (int offset = 1; offset < n; offset <<= 1) {
    const T add = tid >= offset ? s[tid - offset] : T(0);
    __syncthreads();
    s[tid] += add;
    __syncthreads();
  }
  const T before_me = tid > 0 ? s[tid - 1] : T(0);
  *total = s[n - 1];
  __syncthreads();
  return before_me;
}

// thread t's run of consecutive ids [*begin, *end): the scans in id order.
__device__ __forceinline__ void idRun(int64_t cols, int64_t* begin, int64_t* end) {
  const int64_t run = (cols + blockDim.x - 1) / blockDim.x;
  *begin = threadIdx.x * run;
  *end = *begin + run < cols ? *begin + run : cols;
}

// keeps the kept tokens (kept[j] != 0) that come first in top-k order
// (value, then id) while the weight before them is below `target`: finds
// the key cut such that weight(key > cut) < target <= weight(key >= cut) a
// byte at a time (a radix select), then takes the ties at the cut in id
// order. Weight 1 is top-k (target k); the fixed-point mass is top-p.
// Keeps everything when the whole weight is below target.
template <class Weight, class Hist, class Scan>
__device__ void keepFirstByWeight(const float* w, int32_t* kept, int64_t cols, Weight weightOf,
                                  unsigned long long target, Hist hist, Scan scan) {
  unsigned long long above = 0;
  uint32_t prefix = 0, prefix_mask = 0;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (int b = threadIdx.x; b < 256; b += blockDim.x) hist[b] = 0;
    __syncthreads();
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      if (kept[j] == 0) continue;
      const uint32_t key = orderKey(w[j]);
      if ((key & prefix_mask) == prefix) atomicAdd(&hist[(key >> shift) & 255u], weightOf(j));
    }
    __syncthreads();
    // every thread walks the same histogram: the same decision everywhere.
    int b = 255;
    for (; b >= 0; --b) {
      if (above + hist[b] >= target) break;
      above += hist[b];
    }
    __syncthreads();  // before the next byte's histogram is cleared
    if (b < 0) return;
    prefix |= static_cast<uint32_t>(b) << shift;
    prefix_mask |= 255u << shift;
  }
  int64_t begin = 0, end = 0;
  idRun(cols, &begin, &end);
  unsigned long long mine = 0;
  for (int64_t j = begin; j < end; ++j) {
    if (kept[j] != 0 && orderKey(w[j]) == prefix) mine += weightOf(j);
  }
  unsigned long long ties = 0;
  unsigned long long weight_before = above + blockExclusiveScan(mine, scan, &ties);
  for (int64_t j = begin; j < end; ++j) {
    if (kept[j] == 0) continue;
    const uint32_t key = orderKey(w[j]);
    if (key < prefix) {
      kept[j] = 0;
    } else if (key == prefix) {
      if (weight_before >= target) kept[j] = 0;
      weight_before += weightOf(j);
    }
  }
  __syncthreads();
}

// one row a block: w = the row, penalized, biased and masked (Sampler's
// order), then the first maximum, or at temperature the kept set (min_p,
// top_k, top_p in `kept`) and the draw, walked in id order.
static __global__ void sampleRowsKernel(const float* logits, int64_t cols,
                                        const DeviceRowSampling* params, const int32_t* history,
                                        const int32_t* bias_ids, const float* bias_values,
                                        const unsigned long long* mask_words, float* work,
                                        int32_t* marks, int32_t* ids, float* logprobs) {
  TANDEM_SHARED(float, best_v, [gpu::kMaxWarps]);
  TANDEM_SHARED(int, best_i, [gpu::kMaxWarps]);
  TANDEM_SHARED(float, scratch, [gpu::kMaxWarps]);
  TANDEM_SHARED(unsigned long long, hist, [256]);
  TANDEM_SHARED(unsigned long long, count_scan, [kThreads]);
  TANDEM_SHARED(double, mass_scan, [kThreads]);
  TANDEM_SHARED(int, picked, [2]);
  const DeviceRowSampling p = params[blockIdx.x];
  const float* x = logits + blockIdx.x * cols;
  float* w = work + blockIdx.x * cols;
  int32_t* mark = marks + blockIdx.x * cols;
  const int64_t vocab = cols;
  auto in_vocab = [vocab](int32_t t) { return t >= 0 && t < vocab; };
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) w[j] = x[j];
  __syncthreads();

  // penalties: each distinct output token once by its count, then each
  // distinct token seen by the repetition penalty; `mark` counts and flags,
  // and is zero again after.
  const int32_t* prompt = history + p.history_begin;
  const int32_t* output = prompt + p.num_prompt;
  if (p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f) {
    for (int i = threadIdx.x; i < p.num_output; i += blockDim.x) {
      if (in_vocab(output[i])) atomicAdd(&mark[output[i]], 1);
    }
    __syncthreads();
    for (int i = threadIdx.x; i < p.num_output; i += blockDim.x) {
      const int32_t t = output[i];
      if (!in_vocab(t)) continue;
      const int32_t count = atomicExch(&mark[t], 0);
      if (count > 0) w[t] -= p.frequency_penalty * static_cast<float>(count) + p.presence_penalty;
    }
    __syncthreads();
  }
  if (p.repetition_penalty != 1.0f) {
    const int seen = p.num_prompt + p.num_output;
    for (int i = threadIdx.x; i < seen; i += blockDim.x) {
      const int32_t t = prompt[i];
      if (!in_vocab(t) || atomicExch(&mark[t], 1) != 0) continue;
      w[t] = w[t] > 0 ? w[t] / p.repetition_penalty : w[t] * p.repetition_penalty;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < seen; i += blockDim.x) {
      if (in_vocab(prompt[i])) mark[prompt[i]] = 0;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {  // in order: a token may be named twice
    for (int i = 0; i < p.num_bias; ++i) {
      const int32_t t = bias_ids[p.bias_begin + i];
      if (in_vocab(t)) w[t] += bias_values[p.bias_begin + i];
    }
  }
  __syncthreads();
  if (p.mask_tokens >= 0) {
    const unsigned long long* words = mask_words + p.mask_begin;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      if (j >= p.mask_tokens || ((words[j >> 6] >> (j & 63)) & 1ull) == 0) w[j] = -INFINITY;
    }
    __syncthreads();
  }

  int token = 0;
  if (p.inv_temperature == 0.0f) {
    token = firstMaximum(w, cols, best_v, best_i);
  } else {
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) w[j] *= p.inv_temperature;
    __syncthreads();
    float m = -INFINITY;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, w[j]);
    m = gpu::blockMax(m, scratch);
    // min_p: p / p_max = exp(x - max) >= min_p  <=>  x >= max + log(min_p).
    const float min_logit = p.min_p > 0.0f ? m + logf(p.min_p) : -INFINITY;
    unsigned long long mine = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const bool candidate = w[j] >= min_logit && w[j] > -INFINITY;
      mark[j] = candidate ? 1 : 0;
      mine += candidate ? 1 : 0;
    }
    unsigned long long candidates = 0;
    blockExclusiveScan(mine, count_scan, &candidates);
    if (candidates == 0) {
      token = firstMaximum(w, cols, best_v, best_i);  // every logit is -inf
    } else {
      const double max_logit = m;
      auto mass = [w, max_logit](int64_t j) { return exp(static_cast<double>(w[j]) - max_logit); };
      if (p.top_k > 0 && static_cast<unsigned long long>(p.top_k) < candidates) {
        keepFirstByWeight(w, mark, cols, [](int64_t) { return 1ull; },
                          static_cast<unsigned long long>(p.top_k), hist, count_scan);
      }
      int64_t begin = 0, end = 0;
      idRun(cols, &begin, &end);
      if (p.top_p < 1.0f) {
        double kept_mass = 0.0;
        for (int64_t j = begin; j < end; ++j) kept_mass += mark[j] != 0 ? mass(j) : 0.0;
        double total = 0.0;
        blockExclusiveScan(kept_mass, mass_scan, &total);
        const double target = ceil(static_cast<double>(p.top_p) * total * kMassScale);
        keepFirstByWeight(
            w, mark, cols,
            [mass](int64_t j) { return static_cast<unsigned long long>(mass(j) * kMassScale + 0.5); },
            static_cast<unsigned long long>(target), hist, count_scan);
      }
      // the draw: the first kept token whose running mass, in id order,
      // passes u of the kept mass.
      double run_mass = 0.0;
      int last_kept = -1;
      for (int64_t j = begin; j < end; ++j) {
        if (mark[j] == 0) continue;
        run_mass += mass(j);
        last_kept = static_cast<int>(j);
      }
      double total = 0.0;
      double cum = blockExclusiveScan(run_mass, mass_scan, &total);
      const double target = p.u * total;
      if (threadIdx.x == 0) {
        picked[0] = 0x7fffffff;
        picked[1] = -1;
      }
      __syncthreads();
      atomicMax(&picked[1], last_kept);
      for (int64_t j = begin; j < end; ++j) {
        if (mark[j] == 0) continue;
        cum += mass(j);
        if (target < cum) {
          atomicMin(&picked[0], static_cast<int>(j));
          break;
        }
      }
      __syncthreads();
      // rounding can leave the target at the very top: the last kept token.
      token = picked[0] != 0x7fffffff ? picked[0] : picked[1];
    }
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) mark[j] = 0;
  }

  // the log-probability under the raw logits
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) m = fmaxf(m, x[j]);
  m = gpu::blockMax(m, scratch);
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) sum += expf(x[j] - m);
  sum = gpu::blockSum(sum, scratch);
  if (threadIdx.x == 0) {
    ids[blockIdx.x] = token;
    logprobs[blockIdx.x] = x[token] - m - logf(sum);
  }
}

}  // namespace

hipError_t launchGreedy(const float* x, int64_t rows, int64_t cols, int32_t* ids, float* logprobs,
                        hipStream_t stream) {
  if (cols < 1) return hipErrorInvalidValue;
  if (rows == 0) return hipSuccess;
  return gpu::launch("greedy", greedyKernel, dim3(static_cast<unsigned>(rows)), dim3(kThreads),
                     stream, x, cols, ids, logprobs);
}

hipError_t launchSampleRows(const float* logits, int64_t rows, int64_t cols,
                            const DeviceRowSampling* params, const int32_t* history,
                            const int32_t* bias_ids, const float* bias_values,
                            const unsigned long long* mask_words, float* work, int32_t* marks,
                            int32_t* ids, float* logprobs, hipStream_t stream) {
  if (cols < 1 || cols > 0x7fffffff) return hipErrorInvalidValue;
  if (rows == 0) return hipSuccess;
  return gpu::launch("sample_rows", sampleRowsKernel, dim3(static_cast<unsigned>(rows)),
                     dim3(kThreads), stream, logits, cols, params, history, bias_ids, bias_values,
                     mask_words, work, marks, ids, logprobs);
}

}  // namespace tandem::kernels::hip
