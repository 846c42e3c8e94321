#include "kernels/hip/attention_prefill_mma.h"

#include "kernels/hip/device_utils.h"

namespace tandem::kernels::hip {

namespace {

constexpr int kWaves = 4;
constexpr int kRows = 16 * kWaves;  // query rows a block: 16 a wave
constexpr int kKeys = 32;           // key positions a tile
constexpr int kMaxD = kAttentionMaxHeadDim;
constexpr int kLd = kMaxD + 8;      // 16-bit tiles' row stride (16 bytes of pad)
constexpr int kSld = kKeys + 4;     // the score tiles' row stride

// grid (query tiles of kRows, query heads, sequences), kWaves waves a block.
// Wave w takes query rows 16w.. of the tile, its q * scale rounded to the
// cache's 16-bit type and held in A tiles. Two passes over the keys the
// tile can see (its prefix and, causally, its chunk), 32 positions a tile
// staged in LDS: the first finds each row's softmax max and sum from
// S = Q K^T on the matrix cores, the second turns S into P = exp(S - max) /
// sum (rounded to 16 bits) and sums O = P V on the matrix cores. The two
// passes spend one more Q K^T than an online rescale would, and keep O in
// the wave's accumulator tiles from start to end, whose element layout the
// vendor keeps to itself.
template <class T, bool kBf16>
static __global__ void flashPrefillKernel(const float* q, const T* cache, int num_layers,
                                          int block_size, int num_kv_heads, int head_dim,
                                          int layer, const int32_t* seq_info,
                                          const int32_t* block_tables, int num_heads, float scale,
                                          float* out) {
  using Mma = gpu::mma::Tiles<kBf16>;
  // the Q tile first, then the K and V tiles of each key tile
  TANDEM_SHARED(uint16_t, stage, [2 * kKeys * kLd]);
  TANDEM_SHARED(float, scores, [kWaves][16][kSld]);
  TANDEM_SHARED(uint16_t, probs, [kWaves][16][kKeys + 8]);
  TANDEM_SHARED(float, row_max, [kRows]);
  TANDEM_SHARED(float, row_sum, [kRows]);
  static_assert(kRows * kLd == 2 * kKeys * kLd, "the Q tile fills the K and V tiles' space");

  const int32_t* info = seq_info + 4 * blockIdx.z;
  const int q_row = info[0], q_len = info[1], start = info[2];
  const int32_t* table = block_tables + info[3];
  const int q0 = blockIdx.x * kRows;
  if (q0 >= q_len) return;  // the whole block leaves before any barrier
  const int h = blockIdx.y, kvh = h / (num_heads / num_kv_heads), d = head_dim;
  const int lane = threadIdx.x % warpSize, wave = threadIdx.x / warpSize;
  const int64_t q_cols = static_cast<int64_t>(num_heads) * d;
  const int64_t kv_width = static_cast<int64_t>(num_kv_heads) * d;
  const int64_t slice = static_cast<int64_t>(block_size) * kv_width;
  const int64_t block_elems = slice * 2 * num_layers;
  const T* k_base = cache + static_cast<int64_t>(layer) * 2 * slice + kvh * d;
  const T* v_base = k_base + slice;
  uint16_t* ks = &stage[0];
  uint16_t* vs = &stage[kKeys * kLd];
  // keys the tile's last row sees
  const int rows = q_len - q0 < kRows ? q_len - q0 : kRows;
  const int n_keys = start + q0 + rows;

  // Q: rows past the chunk are zeros (their results are never stored)
  for (int e = threadIdx.x; e < kRows * d; e += blockDim.x) {
    const int r = e / d, c = e % d;
    T v;
    gpu::fromFloat(r < rows ? q[(q_row + q0 + r) * q_cols + h * d + c] * scale : 0.0f, &v);
    stage[r * kLd + c] = v.bits;
  }
  __syncthreads();
  typename Mma::A qa[kMaxD / 16];
  for (int kd = 0; kd < d / 16; ++kd) Mma::loadA(qa[kd], &stage[(16 * wave) * kLd + 16 * kd], kLd);
  __syncthreads();  // the stage becomes the K and V tiles

  // rows of this wave's 16: lanes_per_row lanes share a row's 32 scores
  const int lanes_per_row = warpSize / 16, r_local = lane / lanes_per_row;
  const int part = lane % lanes_per_row, cols = kKeys / lanes_per_row;
  const int row = 16 * wave + r_local;
  const int pos = start + q0 + row;  // the row's position: keys up to it
  float m = -INFINITY, l = 0.0f;

  // K (and V) positions kv0 .. kv0 + 31 into LDS, 8 values a thread-load
  auto stageKeys = [&](int kv0, bool values) {
    const int chunks = d / 8;
    for (int e = threadIdx.x; e < kKeys * chunks; e += blockDim.x) {
      const int j = e / chunks, c = (e % chunks) * 8, p = kv0 + j;
      gpu::U32x4 kw{0, 0, 0, 0}, vw{0, 0, 0, 0};
      if (p < n_keys) {
        const int64_t off = table[p / block_size] * block_elems + (p % block_size) * kv_width + c;
        kw = *reinterpret_cast<const gpu::U32x4*>(k_base + off);
        if (values) vw = *reinterpret_cast<const gpu::U32x4*>(v_base + off);
      }
      *reinterpret_cast<gpu::U32x4*>(&ks[j * kLd + c]) = kw;
      if (values) *reinterpret_cast<gpu::U32x4*>(&vs[j * kLd + c]) = vw;
    }
  };
  // this wave's S = Q K^T over the staged keys, into scores[wave]
  auto scoreTile = [&]() {
    for (int n = 0; n < kKeys / 16; ++n) {
      typename Mma::Acc s;
      Mma::zero(s);
      for (int kd = 0; kd < d / 16; ++kd) {
        typename Mma::Bt kb;
        Mma::loadBt(kb, &ks[(16 * n) * kLd + 16 * kd], kLd);
        Mma::fma(s, qa[kd], kb);
      }
      Mma::store(&scores[wave][0][16 * n], kSld, s);
    }
  };

  // pass 1: each row's max and sum over the keys it sees
  for (int kv0 = 0; kv0 < n_keys; kv0 += kKeys) {
    stageKeys(kv0, false);
    __syncthreads();
    scoreTile();
    __syncthreads();
    float tile_max = -INFINITY;
    for (int c = part * cols; c < (part + 1) * cols; ++c) {
      if (kv0 + c <= pos && kv0 + c < n_keys) tile_max = fmaxf(tile_max, scores[wave][r_local][c]);
    }
    tile_max = gpu::groupMax(tile_max, lanes_per_row);
    // every lane sums (the shuffles span the wave), rows this tile does not
    // reach add nothing
    const float m_new = fmaxf(m, tile_max);
    float sum = 0.0f;
    for (int c = part * cols; c < (part + 1) * cols; ++c) {
      if (kv0 + c <= pos && kv0 + c < n_keys) sum += expf(scores[wave][r_local][c] - m_new);
    }
    sum = gpu::groupSum(sum, lanes_per_row);
    if (tile_max != -INFINITY) {
      l = l * (m == -INFINITY ? 0.0f : expf(m - m_new)) + sum;
      m = m_new;
    }
    __syncthreads();  // the next key tile overwrites the stage
  }
  if (part == 0) {
    row_max[row] = m;
    row_sum[row] = l;
  }

  // pass 2: O = P V with P = exp(S - max) / sum in 16 bits
  typename Mma::Acc o[kMaxD / 16];
  for (int nd = 0; nd < d / 16; ++nd) Mma::zero(o[nd]);
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
  for (int kv0 = 0; kv0 < n_keys; kv0 += kKeys) {
    stageKeys(kv0, true);
    __syncthreads();
    scoreTile();
    __syncthreads();
    for (int c = part * cols; c < (part + 1) * cols; ++c) {
      const bool seen = kv0 + c <= pos && kv0 + c < n_keys;
      T p;
      gpu::fromFloat(seen ? expf(scores[wave][r_local][c] - m) * inv : 0.0f, &p);
      probs[wave][r_local][c] = p.bits;
    }
    __syncthreads();
    for (int kk = 0; kk < kKeys / 16; ++kk) {
      typename Mma::A pa;
      Mma::loadA(pa, &probs[wave][0][16 * kk], kKeys + 8);
      for (int nd = 0; nd < d / 16; ++nd) {
        typename Mma::B vb;
        Mma::loadB(vb, &vs[(16 * kk) * kLd + 16 * nd], kLd);
        Mma::fma(o[nd], pa, vb);
      }
    }
    __syncthreads();  // the next key tile overwrites the stage
  }
  // O through the wave's score tile (16 x 16 at a time) to the rows it owns
  for (int nd = 0; nd < d / 16; ++nd) {
    Mma::store(&scores[wave][0][0], kSld, o[nd]);
    __syncthreads();
    for (int e = lane; e < 16 * 16; e += warpSize) {
      const int r = e / 16, c = e % 16, out_row = 16 * wave + r;
      if (out_row < rows) out[(q_row + q0 + out_row) * q_cols + h * d + 16 * nd + c] = scores[wave][r][c];
    }
    __syncthreads();
  }
}

}  // namespace

bool attentionPrefillMmaShape(const AttentionArgs& a) {
  const bool sixteen = a.shape.dtype == DType::kF16 || a.shape.dtype == DType::kBF16;
  return sixteen && a.head_dim % 16 == 0 && a.head_dim <= kMaxD && a.max_q_len > 1 &&
         reinterpret_cast<uintptr_t>(a.cache) % 16 == 0 && gpu::hasMatrixTiles();
}

hipError_t launchAttentionPrefillMma(const AttentionArgs& a, hipStream_t stream) {
  if (!attentionPrefillMmaShape(a) || a.num_kv_heads <= 0 || a.num_heads % a.num_kv_heads != 0) {
    return hipErrorInvalidValue;
  }
  if (a.num_seqs == 0) return hipSuccess;
  const dim3 grid(static_cast<unsigned>((a.max_q_len + kRows - 1) / kRows),
                  static_cast<unsigned>(a.num_heads), static_cast<unsigned>(a.num_seqs));
  const dim3 block(static_cast<unsigned>(kWaves * gpu::hostWarpSize()));
  auto run = [&](auto kernel, auto* cache) {
    return gpu::launch("attention_prefill_mma", kernel, grid, block, stream, a.q, cache,
                       a.shape.num_layers, a.shape.block_size, a.num_kv_heads, a.head_dim, a.layer,
                       a.seq_info, a.block_tables, a.num_heads, a.scale, a.out);
  };
  if (a.shape.dtype == DType::kBF16) {
    return run(flashPrefillKernel<gpu::BF16, true>, static_cast<const gpu::BF16*>(a.cache));
  }
  return run(flashPrefillKernel<gpu::F16, false>, static_cast<const gpu::F16*>(a.cache));
}

}  // namespace tandem::kernels::hip
