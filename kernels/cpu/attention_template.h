// Paged attention over one (sequence, kv head, query range), written over a
// vector type V like kernel_templates.h (which includes this file). Softmax
// is online (flash style) a kv block at a time: scores of one block (four
// keys at a time), their exps a vector at a time, then at most one rescale
// of the running sum and output, so nothing grows with context. Query rows
// that share the kv head (a prefill tile's positions, a GQA group's heads)
// go through a block together, up to kQueryRows at a time, so each key and
// value vector is loaded (and widened from F16/BF16) once for all of them;
// each row's arithmetic is the same as alone.
#pragma once

namespace tandem::kernels::cpu::impl {

// One query row of an attention pass: its vector, its output and the keys
// it sees (causal: up to and including its own position).
struct QueryRow {
  const float* q;
  float* out;
  int n_keys;
};

// scores[r][j] = scale * dot(q_r, key j) for n keys kv_row elements apart
// and the nq <= QB rows: four keys at a time, each key vector loaded once
// for every row (independent fma chains hide the latency: head_dim is only
// a few vectors long). Each score's chain is the same whatever QB.
template <class V, DType KT, int QB>
inline void scoreKeys(const QueryRow* rows, int nq, const void* keys, int64_t kv_row, int n, int d, float scale,
                      float (*scores)[kMaxBlockSize]) {
  using F = typename V::F;
  int j = 0;
  for (; j + 4 <= n; j += 4) {
    F s[QB][4];
    for (int r = 0; r < QB; ++r) {
      for (int c = 0; c < 4; ++c) s[r][c] = V::zero();
    }
    const int64_t row = j * kv_row;
    int e = 0;
    for (; e + V::kWidth <= d; e += V::kWidth) {
      F k[4];
      for (int c = 0; c < 4; ++c) k[c] = loadAs<V, KT>(keys, row + c * kv_row + e);
      for (int r = 0; r < QB; ++r) {
        if (r >= nq) break;
        const F qv = V::load(rows[r].q + e);
        for (int c = 0; c < 4; ++c) s[r][c] = V::fma(qv, k[c], s[r][c]);
      }
    }
    if (e < d) {
      const int t = d - e;
      F k[4];
      for (int c = 0; c < 4; ++c) k[c] = loadAsN<V, KT>(keys, row + c * kv_row + e, t);
      for (int r = 0; r < QB; ++r) {
        if (r >= nq) break;
        const F qv = V::loadN(rows[r].q + e, t);
        for (int c = 0; c < 4; ++c) s[r][c] = V::fma(qv, k[c], s[r][c]);
      }
    }
    for (int r = 0; r < QB; ++r) {
      if (r >= nq) break;
      for (int c = 0; c < 4; ++c) scores[r][j + c] = V::hsum(s[r][c]) * scale;
    }
  }
  for (; j < n; ++j) {
    for (int r = 0; r < nq; ++r) {
      F s = V::zero();
      int e = 0;
      for (; e + V::kWidth <= d; e += V::kWidth) s = V::fma(V::load(rows[r].q + e), loadAs<V, KT>(keys, j * kv_row + e), s);
      if (e < d) s = V::fma(V::loadN(rows[r].q + e, d - e), loadAsN<V, KT>(keys, j * kv_row + e, d - e), s);
      scores[r][j] = V::hsum(s) * scale;
    }
  }
}

// p[j] = exp(p[j] - max) over n scores, a vector at a time; returns sum(p).
template <class V>
inline float expShifted(float* p, int n, float max) {
  const auto m = V::set1(max);
  auto sum = V::zero();
  int j = 0;
  for (; j + V::kWidth <= n; j += V::kWidth) {
    const auto e = V::exp(V::sub(V::load(p + j), m));
    V::store(p + j, e);
    sum = V::add(sum, e);
  }
  float total = V::hsum(sum);
  if (j < n) {
    V::storeN(p + j, V::exp(V::sub(V::loadN(p + j, n - j), m)), n - j);
    for (; j < n; ++j) total += p[j];
  }
  return total;
}

// acc[r][0:d) += sum over j < n_r of p[r][j] * value row j for the nq <= QB
// rows (n_r = rows' keys in this block, nondecreasing in r): a slice of four
// vectors of d at a time kept in registers for every row across the keys,
// each value vector loaded once for the rows that see its key. A row's sum
// runs over j in order, the same whatever QB.
template <class V, DType KT, int QB>
inline void accumulateValues(float (*acc)[kMaxHeadDim], float (*p)[kMaxBlockSize], const int* n_r, int nq,
                             const void* values, int64_t kv_row, int d) {
  using F = typename V::F;
  constexpr int W = V::kWidth;
  const int n = n_r[nq - 1];
  int e = 0;
  for (; e + 4 * W <= d; e += 4 * W) {
    F a[QB][4];
    // rows past nq are never read (zeroed so the compiler need not prove it)
    for (int r = 0; r < QB; ++r) {
      for (int c = 0; c < 4; ++c) a[r][c] = r < nq ? V::load(acc[r] + e + c * W) : V::zero();
    }
    for (int j = 0; j < n; ++j) {
      F v[4];
      for (int c = 0; c < 4; ++c) v[c] = loadAs<V, KT>(values, j * kv_row + e + c * W);
      for (int r = 0; r < QB; ++r) {
        if (r >= nq) break;
        if (QB > 1 && j >= n_r[r]) continue;  // one row: n is its count
        const F pv = V::set1(p[r][j]);
        for (int c = 0; c < 4; ++c) a[r][c] = V::fma(pv, v[c], a[r][c]);
      }
    }
    for (int r = 0; r < QB; ++r) {
      if (r >= nq) break;
      for (int c = 0; c < 4; ++c) V::store(acc[r] + e + c * W, a[r][c]);
    }
  }
  for (; e < d; e += W) {
    const int t = std::min(W, d - e);
    for (int r = 0; r < nq; ++r) {
      F a0 = V::loadN(acc[r] + e, t);
      for (int j = 0; j < n_r[r]; ++j) a0 = V::fma(V::set1(p[r][j]), loadAsN<V, KT>(values, j * kv_row + e, t), a0);
      V::storeN(acc[r] + e, a0, t);
    }
  }
}

// acc[0:d) *= keep
template <class V>
inline void scaleRow(float* acc, float keep, int d) {
  const auto kv = V::set1(keep);
  int j = 0;
  for (; j + V::kWidth <= d; j += V::kWidth) V::store(acc + j, V::mul(kv, V::load(acc + j)));
  if (j < d) V::storeN(acc + j, V::mul(kv, V::loadN(acc + j, d - j)), d - j);
}

// nq <= QB query rows (keys nondecreasing) over one kv head: softmax online
// (flash style) a kv block at a time per row, the keys' and values' loads
// shared by the rows.
template <class V, DType KT, int QB>
void attendRows(const AttendArgs& a, const QueryRow* rows, int nq) {
  using Elem = std::conditional_t<KT == DType::kF32, float, uint16_t>;
  const int d = a.head_dim;
  alignas(64) float acc[QB][kMaxHeadDim];
  float scores[QB][kMaxBlockSize];
  float running_max[QB], total[QB];
  for (int r = 0; r < nq; ++r) {
    running_max[r] = -std::numeric_limits<float>::infinity();
    total[r] = 0.0f;
    std::fill(acc[r], acc[r] + d, 0.0f);
  }
  const int max_keys = rows[nq - 1].n_keys;
  for (int p0 = 0; p0 < max_keys; p0 += a.block_size) {
    const int n = std::min(a.block_size, max_keys - p0);
    const char* block = a.cache + static_cast<size_t>(a.table[p0 / a.block_size]) * a.block_bytes;
    const Elem* keys = reinterpret_cast<const Elem*>(block + a.k_offset) + static_cast<int64_t>(a.kv_head) * d;
    const Elem* values = reinterpret_cast<const Elem*>(block + a.v_offset) + static_cast<int64_t>(a.kv_head) * d;
    // rows whose keys end before this block take part in no more blocks
    int first = 0;
    if constexpr (QB > 1) {
      while (rows[first].n_keys <= p0) ++first;
    }
    const int m = nq - first;
    scoreKeys<V, KT, QB>(rows + first, m, keys, a.kv_row, n, d, a.scale, scores + first);
    int n_r[QB];
    for (int r = first; r < nq; ++r) {
      n_r[r - first] = std::min(n, rows[r].n_keys - p0);
      float* sr = scores[r];
      const float new_max = std::max(running_max[r], *std::max_element(sr, sr + n_r[r - first]));
      // rescale what earlier blocks summed once per block; the first block
      // has nothing to rescale
      if (running_max[r] != -std::numeric_limits<float>::infinity() && new_max > running_max[r]) {
        const float keep = std::exp(running_max[r] - new_max);
        total[r] *= keep;
        scaleRow<V>(acc[r], keep, d);
      }
      total[r] += expShifted<V>(sr, n_r[r - first], new_max);
      running_max[r] = new_max;
    }
    accumulateValues<V, KT, QB>(acc + first, scores + first, n_r, m, values, a.kv_row, d);
  }
  for (int r = 0; r < nq; ++r) {
    const float inv = 1.0f / total[r];
    for (int j = 0; j < d; ++j) rows[r].out[j] = acc[r][j] * inv;
  }
}

// the rows of a pass sharing one kv head's loads: 4 with AVX-512's 32
// registers (4 rows x 4 sums), 2 elsewhere (AVX2's 16).
template <class V>
constexpr int kQueryRows = V::kWidth >= 16 ? 4 : 2;

template <class V, DType KT>
void attendTyped(const AttendArgs& a) {
  constexpr int QB = kQueryRows<V>;
  const int d = a.head_dim;
  // the task's rows in order of position (its query heads of a position
  // together), QB at a time
  QueryRow rows[QB];
  int nq = 0;
  const auto flush = [&] {
    if (nq == 1) {
      attendRows<V, KT, 1>(a, rows, 1);
    } else if (nq > 1) {
      attendRows<V, KT, QB>(a, rows, nq);
    }
    nq = 0;
  };
  for (int i = a.q_begin; i < a.q_end; ++i) {
    for (int g = 0; g < a.group; ++g) {
      const int64_t off = i * a.row_stride + static_cast<int64_t>(a.first_head + g) * d;
      rows[nq++] = {a.q + off, a.out + off, a.start_pos + i + 1};
      if (nq == QB) flush();
    }
  }
  flush();
}

template <class V>
void attend(const AttendArgs& a) {
  dispatchDType(a.kv_dtype, [&]<DType KT>() { attendTyped<V, KT>(a); });
}

template <class V>
KernelTable makeKernelTable(SimdLevel level) {
  return KernelTable{
      level, &matmul<V>, &rmsNorm<V>, &siluMul<V>, &add<V>, &toF32<V>, &fromF32<V>, &attend<V>,
  };
}

}  // namespace tandem::kernels::cpu::impl
