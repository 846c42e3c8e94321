#include "kernels/hip/attention_decode.h"

#include "kernels/hip/device_utils.h"

namespace tandem::kernels::hip {

namespace {

constexpr int kThreads = kDecodePartition;  // one key per thread when scoring
constexpr int kMaxD = kAttentionMaxHeadDim;
constexpr int kMaxGroup = kDecodeMaxGroup;

int numSplits(const AttentionArgs& a) {
  return (a.max_context + kDecodePartition - 1) / kDecodePartition;
}

// grid (splits, kv heads, sequences). Partial results per (sequence, query
// head, split): acc[head_dim] (unnormalised), then max and sum.
template <class T>
static __global__ void attentionDecodeKernel(const float* q, const T* cache, int num_layers,
                                             int block_size, int num_kv_heads, int head_dim,
                                             int layer, const int32_t* seq_info,
                                             const int32_t* block_tables, int num_heads,
                                             float scale, int num_splits, float* partial) {
  TANDEM_SHARED(float, qs, [kMaxGroup][kMaxD]);
  TANDEM_SHARED(float, ps, [kMaxGroup][kDecodePartition]);
  TANDEM_SHARED(float, stats, [kMaxGroup][2]);
  TANDEM_SHARED(float, scratch, [gpu::kMaxWarps]);

  const int32_t* info = seq_info + 4 * blockIdx.z;
  const int q_row = info[0], n_keys = info[2] + info[1];
  const int32_t* table = block_tables + info[3];
  const int k_begin = blockIdx.x * kDecodePartition;
  if (k_begin >= n_keys) return;  // the whole block: past this sequence's context
  const int k_end = n_keys - k_begin < kDecodePartition ? n_keys : k_begin + kDecodePartition;
  const int kvh = blockIdx.y;
  const int group = num_heads / num_kv_heads;
  const int d = head_dim;
  const int64_t q_cols = static_cast<int64_t>(num_heads) * d;
  const int64_t kv_width = static_cast<int64_t>(num_kv_heads) * d;
  const int64_t slice = static_cast<int64_t>(block_size) * kv_width;
  const int64_t block_elems = slice * 2 * num_layers;
  const T* k_base = cache + static_cast<int64_t>(layer) * 2 * slice + kvh * d;
  const T* v_base = k_base + slice;

  for (int e = threadIdx.x; e < group * d; e += kThreads) {
    qs[e / d][e % d] = q[q_row * q_cols + (kvh * group + e / d) * d + e % d];
  }
  __syncthreads();

  const int p = k_begin + threadIdx.x;
  const bool valid = p < k_end;
  float dots[kMaxGroup];
  for (int g = 0; g < kMaxGroup; ++g) dots[g] = 0.0f;
  if (valid) {
    const T* krow = k_base + table[p / block_size] * block_elems + (p % block_size) * kv_width;
    for (int c = 0; c < d; ++c) {
      const float kc = gpu::toFloat(krow[c]);
      for (int g = 0; g < group; ++g) dots[g] += qs[g][c] * kc;
    }
  }
  for (int g = 0; g < group; ++g) {
    const float s = valid ? dots[g] * scale : -INFINITY;
    const float m = gpu::blockMax(s, scratch);  // finite: position k_begin is valid
    const float e = valid ? expf(s - m) : 0.0f;
    ps[g][threadIdx.x] = e;
    const float l = gpu::blockSum(e, scratch);
    if (threadIdx.x == 0) {
      stats[g][0] = m;
      stats[g][1] = l;
    }
  }
  __syncthreads();

  const int n = k_end - k_begin;
  for (int e = threadIdx.x; e < group * d; e += kThreads) {
    const int g = e / d, c = e % d;
    float o = 0.0f;
    for (int j = 0; j < n; ++j) {
      const int pj = k_begin + j;
      const T* vrow = v_base + table[pj / block_size] * block_elems + (pj % block_size) * kv_width;
      o += ps[g][j] * gpu::toFloat(vrow[c]);
    }
    const int h = kvh * group + g;
    float* part =
        partial +
        ((static_cast<int64_t>(blockIdx.z) * num_heads + h) * num_splits + blockIdx.x) * (d + 2);
    part[c] = o;
    if (c == 0) {
      part[d] = stats[g][0];
      part[d + 1] = stats[g][1];
    }
  }
}

// grid (heads, sequences), one thread per output element: merges the
// partitions the sequence used.
static __global__ void attentionDecodeCombineKernel(const float* partial, const int32_t* seq_info,
                                                    int num_heads, int head_dim, int num_splits,
                                                    float* out) {
  const int32_t* info = seq_info + 4 * blockIdx.y;
  const int q_row = info[0], n_keys = info[2] + info[1];
  const int used = (n_keys + kDecodePartition - 1) / kDecodePartition;
  const int h = blockIdx.x, d = head_dim;
  const float* part =
      partial + (static_cast<int64_t>(blockIdx.y) * num_heads + h) * num_splits * (d + 2);
  float m = -INFINITY;
  for (int s = 0; s < used; ++s) m = fmaxf(m, part[s * (d + 2) + d]);
  for (int c = threadIdx.x; c < d; c += blockDim.x) {
    float total = 0.0f, o = 0.0f;
    for (int s = 0; s < used; ++s) {
      const float w = expf(part[s * (d + 2) + d] - m);
      total += part[s * (d + 2) + d + 1] * w;
      o += part[s * (d + 2) + c] * w;
    }
    out[static_cast<int64_t>(q_row) * num_heads * d + h * d + c] = o / total;
  }
}

}  // namespace

size_t attentionDecodeWorkspace(const AttentionArgs& a) {
  return static_cast<size_t>(a.num_seqs) * a.num_heads * numSplits(a) * (a.head_dim + 2);
}

hipError_t launchAttentionDecode(const AttentionArgs& a, float* workspace, hipStream_t stream) {
  if (a.head_dim > kMaxD || a.head_dim <= 0 || a.num_kv_heads <= 0 ||
      a.num_heads % a.num_kv_heads != 0 || a.num_heads / a.num_kv_heads > kMaxGroup ||
      a.max_q_len != 1) {
    return hipErrorInvalidValue;
  }
  if (a.num_seqs == 0) return hipSuccess;
  const int splits = numSplits(a);
  const dim3 grid(static_cast<unsigned>(splits), static_cast<unsigned>(a.num_kv_heads),
                  static_cast<unsigned>(a.num_seqs));
  const hipError_t e = TANDEM_DISPATCH_ELEM(a.shape.dtype, T, [&] {
    return gpu::launch("attention_decode", attentionDecodeKernel<T>, grid, dim3(kThreads), stream,
                       a.q, static_cast<const T*>(a.cache), a.shape.num_layers, a.shape.block_size,
                       a.num_kv_heads, a.head_dim, a.layer, a.seq_info, a.block_tables, a.num_heads,
                       a.scale, splits, workspace);
  });
  if (e != hipSuccess) return e;
  const unsigned threads = a.head_dim <= 64 ? 64 : 128;
  return gpu::launch("attention_decode_combine", attentionDecodeCombineKernel,
                     dim3(static_cast<unsigned>(a.num_heads), static_cast<unsigned>(a.num_seqs)),
                     dim3(threads), stream, workspace, a.seq_info, a.num_heads, a.head_dim, splits,
                     a.out);
}

}  // namespace tandem::kernels::hip
