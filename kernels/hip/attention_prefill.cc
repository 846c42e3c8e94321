#include "kernels/hip/attention_prefill.h"

#include "kernels/hip/device_utils.h"

namespace tandem::kernels::hip {

namespace {

constexpr int kRows = 16;  // query rows per block
constexpr int kKeys = 32;  // key positions per LDS tile
constexpr int kMaxD = kAttentionMaxHeadDim;
constexpr int kThreads = 256;
constexpr int kOwned = kRows * kMaxD / kThreads;  // output elements per thread

// grid (query tiles, heads, sequences).
template <class T>
static __global__ void attentionPrefillKernel(const float* q, const T* cache, int num_layers,
                                              int block_size, int num_kv_heads, int head_dim,
                                              int layer, const int32_t* seq_info,
                                              const int32_t* block_tables, int num_heads,
                                              float scale, float* out) {
  TANDEM_SHARED(float, qs, [kRows][kMaxD]);
  TANDEM_SHARED(float, ks, [kKeys][kMaxD + 1]);
  TANDEM_SHARED(float, vs, [kKeys][kMaxD]);
  TANDEM_SHARED(float, ps, [kRows][kKeys]);
  TANDEM_SHARED(float, row_max, [kRows]);
  TANDEM_SHARED(float, row_sum, [kRows]);
  TANDEM_SHARED(float, row_alpha, [kRows]);

  const int32_t* info = seq_info + 4 * blockIdx.z;
  const int q_row = info[0], q_len = info[1], start = info[2];
  const int32_t* table = block_tables + info[3];
  const int q0 = blockIdx.x * kRows;
  if (q0 >= q_len) return;  // the whole block leaves before any barrier
  const int rows = q_len - q0 < kRows ? q_len - q0 : kRows;
  const int h = blockIdx.y;
  const int kvh = h / (num_heads / num_kv_heads);
  const int d = head_dim;
  const int64_t q_cols = static_cast<int64_t>(num_heads) * d;
  const int64_t kv_width = static_cast<int64_t>(num_kv_heads) * d;
  const int64_t slice = static_cast<int64_t>(block_size) * kv_width;
  const int64_t block_elems = slice * 2 * num_layers;
  const T* k_base = cache + static_cast<int64_t>(layer) * 2 * slice + kvh * d;
  const T* v_base = k_base + slice;

  for (int e = threadIdx.x; e < rows * d; e += kThreads) {
    qs[e / d][e % d] = q[(q_row + q0 + e / d) * q_cols + h * d + e % d];
  }
  if (threadIdx.x < kRows) {
    row_max[threadIdx.x] = -INFINITY;
    row_sum[threadIdx.x] = 0.0f;
  }
  float acc[kOwned];
  for (int i = 0; i < kOwned; ++i) acc[i] = 0.0f;
  // keys this tile of rows can see: up to the position of its last row
  const int n_keys = start + q0 + rows;
  __syncthreads();

  for (int kv0 = 0; kv0 < n_keys; kv0 += kKeys) {
    for (int e = threadIdx.x; e < kKeys * d; e += kThreads) {
      const int j = e / d, c = e % d, p = kv0 + j;
      float kval = 0.0f, vval = 0.0f;
      if (p < n_keys) {
        const int64_t off = table[p / block_size] * block_elems + (p % block_size) * kv_width + c;
        kval = gpu::toFloat(k_base[off]);
        vval = gpu::toFloat(v_base[off]);
      }
      ks[j][c] = kval;
      vs[j][c] = vval;
    }
    __syncthreads();
    for (int e = threadIdx.x; e < kRows * kKeys; e += kThreads) {
      const int r = e / kKeys, j = e % kKeys, p = kv0 + j;
      float s = -INFINITY;
      if (r < rows && p <= start + q0 + r) {
        float dot = 0.0f;
        for (int c = 0; c < d; ++c) dot += qs[r][c] * ks[j][c];
        s = dot * scale;
      }
      ps[r][j] = s;
    }
    __syncthreads();
    // online softmax: one thread per row rescales what came before
    if (threadIdx.x < kRows) {
      const int r = threadIdx.x;
      const float m_old = row_max[r];
      float m_new = m_old;
      for (int j = 0; j < kKeys; ++j) m_new = fmaxf(m_new, ps[r][j]);
      float alpha = 1.0f, sum = 0.0f;
      if (m_new != -INFINITY) {
        alpha = m_old == -INFINITY ? 0.0f : expf(m_old - m_new);
        for (int j = 0; j < kKeys; ++j) {
          const float pj = ps[r][j] == -INFINITY ? 0.0f : expf(ps[r][j] - m_new);
          ps[r][j] = pj;
          sum += pj;
        }
      } else {
        for (int j = 0; j < kKeys; ++j) ps[r][j] = 0.0f;
      }
      row_sum[r] = row_sum[r] * alpha + sum;
      row_max[r] = m_new;
      row_alpha[r] = alpha;
    }
    __syncthreads();
    for (int i = 0; i < kOwned; ++i) {
      const int e = threadIdx.x + i * kThreads;
      if (e >= rows * d) break;
      const int r = e / d, c = e % d;
      float o = acc[i] * row_alpha[r];
      for (int j = 0; j < kKeys; ++j) o += ps[r][j] * vs[j][c];
      acc[i] = o;
    }
    __syncthreads();  // the next tile overwrites ks, vs and ps
  }
  for (int i = 0; i < kOwned; ++i) {
    const int e = threadIdx.x + i * kThreads;
    if (e >= rows * d) break;
    const int r = e / d, c = e % d;
    out[(q_row + q0 + r) * q_cols + h * d + c] = acc[i] / row_sum[r];
  }
}

}  // namespace

hipError_t launchAttentionPrefill(const AttentionArgs& a, hipStream_t stream) {
  if (a.head_dim > kMaxD || a.head_dim <= 0 || a.num_kv_heads <= 0 ||
      a.num_heads % a.num_kv_heads != 0) {
    return hipErrorInvalidValue;
  }
  if (a.num_seqs == 0 || a.max_q_len == 0) return hipSuccess;
  const dim3 grid(static_cast<unsigned>((a.max_q_len + kRows - 1) / kRows),
                  static_cast<unsigned>(a.num_heads), static_cast<unsigned>(a.num_seqs));
  return TANDEM_DISPATCH_ELEM(a.shape.dtype, T, [&] {
    return gpu::launch("attention_prefill", attentionPrefillKernel<T>, grid, dim3(kThreads), stream,
                       a.q, static_cast<const T*>(a.cache), a.shape.num_layers, a.shape.block_size,
                       a.num_kv_heads, a.head_dim, a.layer, a.seq_info, a.block_tables, a.num_heads,
                       a.scale, a.out);
  });
}

}  // namespace tandem::kernels::hip
