#include "kernels/hip/attention_decode.h"

#include "kernels/hip/device_utils.h"

namespace tandem::kernels::hip {

namespace {

constexpr int kThreads = 256;
constexpr int kMaxD = kAttentionMaxHeadDim;
constexpr int kMaxGroup = kDecodeMaxGroup;
constexpr int kMaxPartition = kDecodeMaxPartition;
constexpr int kFlashMaxPartition = kDecodeMaxFlashPartition;

int numSplits(const AttentionArgs& a, int partition) {
  return (a.max_context + partition - 1) / partition;
}

// where a sequence's position p of this layer and kv head starts in the cache
struct CacheRows {
  const int32_t* table;
  int block_size;
  int64_t block_elems, kv_width;
  __device__ __forceinline__ int64_t offset(int p) const {
    return table[p / block_size] * block_elems + (p % block_size) * kv_width;
  }
};

// --- 16-byte loads of n values (n a multiple of 8) ---
__device__ __forceinline__ void loadValues(const float* p, int n, float* out) {
  for (int i = 0; i < n; i += 4) {
    const gpu::F32x4 v = *reinterpret_cast<const gpu::F32x4*>(p + i);
    out[i] = v.x, out[i + 1] = v.y, out[i + 2] = v.z, out[i + 3] = v.w;
  }
}
template <class T>
__device__ __forceinline__ void loadValues(const T* p, int n, float* out) {
  for (int i = 0; i < n; i += 8) {
    const gpu::U32x4 v = *reinterpret_cast<const gpu::U32x4*>(p + i);
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
    for (int j = 0; j < 4; ++j) {
      out[i + 2 * j] = gpu::toFloat(T{static_cast<uint16_t>(w[j] & 0xffffu)});
      out[i + 2 * j + 1] = gpu::toFloat(T{static_cast<uint16_t>(w[j] >> 16)});
    }
  }
}

// grid (splits, kv heads, sequences), four waves a block. Each wave walks
// its share of the partition's keys (its lanes in groups of head_dim / 8, a
// group a key: 16-byte loads of the key's and the value's slice), scoring
// kG query heads at once and folding each key into an online softmax (max,
// sum, the weighted sum of values) kept in registers: K and V are read in
// one pass, with no LDS round trip per key. The groups of a wave merge by
// shuffles, the four waves through LDS. One split: the normalized output;
// else partial results per (sequence, query head, split): acc[head_dim]
// (unnormalized), max and sum.
constexpr int kFlashWaves = 4;
constexpr int kFlashMaxHeads = 8;  // query heads scored at once, at most

template <class T, int kG>
static __global__ void flashDecodeKernel(const float* q, const T* cache, int num_layers,
                                         int block_size, int num_kv_heads, int head_dim,
                                         int layer, const int32_t* seq_info,
                                         const int32_t* block_tables, int num_heads, float scale,
                                         int partition, int num_splits, float* partial,
                                         float* out) {
  TANDEM_SHARED(float, merge, [kFlashWaves][kFlashMaxHeads][kMaxD + 2]);
  const int32_t* info = seq_info + 4 * blockIdx.z;
  const int q_row = info[0], n_keys = info[2] + info[1];
  const int k_begin = blockIdx.x * partition;
  if (k_begin >= n_keys) return;  // the whole block: past this sequence's context
  const int k_end = n_keys - k_begin < partition ? n_keys : k_begin + partition;
  const int kvh = blockIdx.y, group = num_heads / num_kv_heads, d = head_dim;
  const int64_t kv_width = static_cast<int64_t>(num_kv_heads) * d;
  const int64_t slice = static_cast<int64_t>(block_size) * kv_width;
  const CacheRows rows{block_tables + info[3], block_size, slice * 2 * num_layers, kv_width};
  const int lanes = d / 8, lane = threadIdx.x % warpSize, wave = threadIdx.x / warpSize;
  const int sub = lane % lanes, slot = lane / lanes, per_wave = warpSize / lanes;
  const T* k_base = cache + static_cast<int64_t>(layer) * 2 * slice + kvh * d + sub * 8;
  const T* v_base = k_base + slice;
  const float* q_heads = q + static_cast<int64_t>(q_row) * num_heads * d + kvh * group * d;

  for (int g0 = 0; g0 < group; g0 += kG) {
    float qv[kG][8], m[kG], l[kG], acc[kG][8];
    for (int g = 0; g < kG; ++g) {
      for (int e = 0; e < 8; ++e) {
        qv[g][e] = g0 + g < group ? q_heads[(g0 + g) * d + sub * 8 + e] * scale : 0.0f;
        acc[g][e] = 0.0f;
      }
      m[g] = -INFINITY;
      l[g] = 0.0f;
    }
    // the same trip count for a whole wave: the sums' shuffles span it (no
    // unroll pragma: ROCm 5.2's clang cannot unroll this loop and -Werror
    // makes that an error)
    for (int base = k_begin + wave * per_wave; base < k_end; base += kFlashWaves * per_wave) {
      const int p = base + slot;
      const bool valid = p < k_end;
      float kv[8] = {}, vv[8] = {};
      if (valid) {
        const int64_t at = rows.offset(p);
        loadValues(k_base + at, 8, kv);
        loadValues(v_base + at, 8, vv);
      }
      for (int g = 0; g < kG; ++g) {
        float s = 0.0f;
        for (int e = 0; e < 8; ++e) s += qv[g][e] * kv[e];
        s = gpu::groupSum(s, lanes);
        if (!valid) continue;
        if (s > m[g]) {  // a new max: rescale what the slot has so far
          const float c = expf(m[g] - s);
          l[g] *= c;
          for (int e = 0; e < 8; ++e) acc[g][e] *= c;
          m[g] = s;
        }
        const float pe = expf(s - m[g]);
        l[g] += pe;
        for (int e = 0; e < 8; ++e) acc[g][e] += pe * vv[e];
      }
    }
    // the wave's key slots into slot 0 (lanes of one sub hold one slice)
    for (int off = lanes; off < warpSize; off *= 2) {
      for (int g = 0; g < kG; ++g) {
        const float mo = TANDEM_SHFL_XOR(m[g], off);
        const float lo = TANDEM_SHFL_XOR(l[g], off);
        float ao[8];
        for (int e = 0; e < 8; ++e) ao[e] = TANDEM_SHFL_XOR(acc[g][e], off);
        const float mn = fmaxf(m[g], mo);
        if (mn == -INFINITY) continue;  // neither saw a key
        const float c1 = expf(m[g] - mn), c2 = expf(mo - mn);
        l[g] = l[g] * c1 + lo * c2;
        for (int e = 0; e < 8; ++e) acc[g][e] = acc[g][e] * c1 + ao[e] * c2;
        m[g] = mn;
      }
    }
    if (slot == 0) {
      for (int g = 0; g < kG; ++g) {
        for (int e = 0; e < 8; ++e) merge[wave][g][sub * 8 + e] = acc[g][e];
        if (sub == 0) {
          merge[wave][g][d] = m[g];
          merge[wave][g][d + 1] = l[g];
        }
      }
    }
    __syncthreads();
    for (int e = threadIdx.x; e < kG * d; e += blockDim.x) {
      const int g = e / d, c = e % d, h = kvh * group + g0 + g;
      if (g0 + g >= group) continue;
      float mx = -INFINITY;
      for (int w = 0; w < kFlashWaves; ++w) mx = fmaxf(mx, merge[w][g][d]);
      float o = 0.0f, total = 0.0f;
      for (int w = 0; w < kFlashWaves; ++w) {
        const float c1 = merge[w][g][d] == -INFINITY ? 0.0f : expf(merge[w][g][d] - mx);
        o += merge[w][g][c] * c1;
        total += merge[w][g][d + 1] * c1;
      }
      if (num_splits == 1) {
        out[static_cast<int64_t>(q_row) * num_heads * d + h * d + c] = o / total;
      } else {
        float* part = partial + ((static_cast<int64_t>(blockIdx.z) * num_heads + h) * num_splits +
                                 blockIdx.x) *
                                    (d + 2);
        part[c] = o;
        if (c == 0) {
          part[d] = mx;
          part[d + 1] = total;
        }
      }
    }
    __syncthreads();  // merge is rewritten by the next pass
  }
}

// the general kernel, any head_dim: one key a thread when scoring, and a
// thread per output element when summing values.
template <class T>
static __global__ void attentionDecodeKernel(const float* q, const T* cache, int num_layers,
                                             int block_size, int num_kv_heads, int head_dim,
                                             int layer, const int32_t* seq_info,
                                             const int32_t* block_tables, int num_heads,
                                             float scale, int partition, int num_splits,
                                             float* partial) {
  TANDEM_SHARED(float, qs, [kMaxGroup][kMaxD]);
  TANDEM_SHARED(float, ps, [kMaxGroup][kMaxPartition]);
  TANDEM_SHARED(float, stats, [kMaxGroup][2]);
  TANDEM_SHARED(float, scratch, [gpu::kMaxWarps]);

  const int32_t* info = seq_info + 4 * blockIdx.z;
  const int q_row = info[0], n_keys = info[2] + info[1];
  const int k_begin = blockIdx.x * partition;
  if (k_begin >= n_keys) return;  // the whole block: past this sequence's context
  const int k_end = n_keys - k_begin < partition ? n_keys : k_begin + partition;
  const int kvh = blockIdx.y;
  const int group = num_heads / num_kv_heads;
  const int d = head_dim;
  const int64_t q_cols = static_cast<int64_t>(num_heads) * d;
  const int64_t kv_width = static_cast<int64_t>(num_kv_heads) * d;
  const int64_t slice = static_cast<int64_t>(block_size) * kv_width;
  const CacheRows rows{block_tables + info[3], block_size, slice * 2 * num_layers, kv_width};
  const T* k_base = cache + static_cast<int64_t>(layer) * 2 * slice + kvh * d;
  const T* v_base = k_base + slice;

  for (int e = threadIdx.x; e < group * d; e += kThreads) {
    qs[e / d][e % d] = q[q_row * q_cols + (kvh * group + e / d) * d + e % d];
  }
  __syncthreads();

  // positions k_begin + t, k_begin + t + kThreads, ... of the partition
  for (int g = 0; g < group; ++g) {
    float m = -INFINITY;
    for (int p = k_begin + threadIdx.x; p < k_end; p += kThreads) {
      const T* krow = k_base + rows.offset(p);
      float s = 0.0f;
      for (int c = 0; c < d; ++c) s += qs[g][c] * gpu::toFloat(krow[c]);
      ps[g][p - k_begin] = s * scale;
      m = fmaxf(m, s * scale);
    }
    m = gpu::blockMax(m, scratch);  // finite: position k_begin is valid
    float l = 0.0f;
    for (int p = k_begin + threadIdx.x; p < k_end; p += kThreads) {
      const float e = expf(ps[g][p - k_begin] - m);
      ps[g][p - k_begin] = e;
      l += e;
    }
    l = gpu::blockSum(l, scratch);
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
    for (int j = 0; j < n; ++j) o += ps[g][j] * gpu::toFloat(v_base[rows.offset(k_begin + j) + c]);
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
                                                    int num_heads, int head_dim, int partition,
                                                    int num_splits, float* out) {
  const int32_t* info = seq_info + 4 * blockIdx.y;
  const int q_row = info[0], n_keys = info[2] + info[1];
  const int used = (n_keys + partition - 1) / partition;
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

// 16-byte rows: head_dim / 8 lanes a key must be a power of two no wider
// than a wave, and every row start 16-byte aligned.
bool flashShape(const AttentionArgs& a) {
  const int d = a.head_dim;
  const bool pow2 = d == 16 || d == 32 || d == 64 || d == 128;
  const size_t elem = a.shape.dtype == DType::kF32 ? 4 : 2;
  return pow2 && reinterpret_cast<uintptr_t>(a.cache) % 16 == 0 && d * elem % 16 == 0;
}

// the query heads the flash kernel scores at once: the group, rounded up to
// a power of two, at most kFlashMaxHeads (larger groups take more passes).
int flashHeads(int group) {
  int g = 1;
  while (g < group && g < kFlashMaxHeads) g *= 2;
  return g;
}

}  // namespace

int attentionDecodePartition(const AttentionArgs& a, int partition) {
  if (partition > 0) return partition;
  // the largest of 1024 ... 64 that still gives ~4 blocks a multiprocessor
  // (the general kernel's scores hold kDecodeMaxPartition): long single
  // sequences split finely, large batches not
  const int64_t target = 4 * static_cast<int64_t>(gpu::hostMultiprocessors());
  int p = flashShape(a) ? kFlashMaxPartition : kMaxPartition;
  while (p > 64 && static_cast<int64_t>(numSplits(a, p)) * a.num_kv_heads * a.num_seqs < target) {
    p /= 2;
  }
  return p;
}

size_t attentionDecodeWorkspace(const AttentionArgs& a, int partition) {
  const int p = attentionDecodePartition(a, partition);
  return static_cast<size_t>(a.num_seqs) * a.num_heads * numSplits(a, p) * (a.head_dim + 2);
}

hipError_t launchAttentionDecode(const AttentionArgs& a, float* workspace, hipStream_t stream,
                                 int partition) {
  const int p = attentionDecodePartition(a, partition);
  const bool flash = flashShape(a);
  if (a.head_dim > kMaxD || a.head_dim <= 0 || a.num_kv_heads <= 0 ||
      a.num_heads % a.num_kv_heads != 0 || a.num_heads / a.num_kv_heads > kMaxGroup ||
      a.max_q_len != 1 || p <= 0 || p > (flash ? kFlashMaxPartition : kMaxPartition) ||
      p % 32 != 0) {
    return hipErrorInvalidValue;
  }
  if (a.num_seqs == 0) return hipSuccess;
  const int splits = numSplits(a, p);
  const dim3 grid(static_cast<unsigned>(splits), static_cast<unsigned>(a.num_kv_heads),
                  static_cast<unsigned>(a.num_seqs));
  const hipError_t e = TANDEM_DISPATCH_ELEM(a.shape.dtype, T, [&] {
    const T* cache = static_cast<const T*>(a.cache);
    if (flash) {
      const dim3 block(static_cast<unsigned>(kFlashWaves * gpu::hostWarpSize()));
      auto run = [&](auto kernel) {
        return gpu::launch("attention_decode_flash", kernel, grid, block, stream, a.q, cache,
                           a.shape.num_layers, a.shape.block_size, a.num_kv_heads, a.head_dim,
                           a.layer, a.seq_info, a.block_tables, a.num_heads, a.scale, p, splits,
                           workspace, a.out);
      };
      switch (flashHeads(a.num_heads / a.num_kv_heads)) {
        case 1: return run(flashDecodeKernel<T, 1>);
        case 2: return run(flashDecodeKernel<T, 2>);
        case 4: return run(flashDecodeKernel<T, 4>);
        default: return run(flashDecodeKernel<T, 8>);
      }
    }
    return gpu::launch("attention_decode", attentionDecodeKernel<T>, grid, dim3(kThreads), stream,
                       a.q, cache, a.shape.num_layers, a.shape.block_size, a.num_kv_heads,
                       a.head_dim, a.layer, a.seq_info, a.block_tables, a.num_heads, a.scale, p,
                       splits, workspace);
  });
  if (e != hipSuccess || (flash && splits == 1)) return e;
  const unsigned threads = a.head_dim <= 64 ? 64 : 128;
  return gpu::launch("attention_decode_combine", attentionDecodeCombineKernel,
                     dim3(static_cast<unsigned>(a.num_heads), static_cast<unsigned>(a.num_seqs)),
                     dim3(threads), stream, workspace, a.seq_info, a.num_heads, a.head_dim, p,
                     splits, a.out);
}

}  // namespace tandem::kernels::hip
