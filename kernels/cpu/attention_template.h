// Paged attention over one (sequence, kv head, query range), written over a
// vector type V like kernel_templates.h (which includes this file). Softmax
// is online (flash style) a kv block at a time: scores of one block (four
// keys at a time), their exps a vector at a time, then at most one rescale
// of the running sum and output, so nothing grows with context.
#pragma once

namespace tandem::kernels::cpu::impl {

// scores[j] = scale * dot(q, key j) for n keys kv_row elements apart, four
// keys at a time so four independent fma chains hide the latency (head_dim
// is only a few vectors long).
template <class V, DType KT>
inline void scoreKeys(const float* q, const void* keys, int64_t kv_row, int n, int d, float scale,
                      float* scores) {
  using F = typename V::F;
  int j = 0;
  for (; j + 4 <= n; j += 4) {
    F s0 = V::zero(), s1 = V::zero(), s2 = V::zero(), s3 = V::zero();
    const int64_t r = j * kv_row;
    int e = 0;
    for (; e + V::kWidth <= d; e += V::kWidth) {
      const F qv = V::load(q + e);
      s0 = V::fma(qv, loadAs<V, KT>(keys, r + e), s0);
      s1 = V::fma(qv, loadAs<V, KT>(keys, r + kv_row + e), s1);
      s2 = V::fma(qv, loadAs<V, KT>(keys, r + 2 * kv_row + e), s2);
      s3 = V::fma(qv, loadAs<V, KT>(keys, r + 3 * kv_row + e), s3);
    }
    if (e < d) {
      const int t = d - e;
      const F qv = V::loadN(q + e, t);
      s0 = V::fma(qv, loadAsN<V, KT>(keys, r + e, t), s0);
      s1 = V::fma(qv, loadAsN<V, KT>(keys, r + kv_row + e, t), s1);
      s2 = V::fma(qv, loadAsN<V, KT>(keys, r + 2 * kv_row + e, t), s2);
      s3 = V::fma(qv, loadAsN<V, KT>(keys, r + 3 * kv_row + e, t), s3);
    }
    scores[j] = V::hsum(s0) * scale;
    scores[j + 1] = V::hsum(s1) * scale;
    scores[j + 2] = V::hsum(s2) * scale;
    scores[j + 3] = V::hsum(s3) * scale;
  }
  for (; j < n; ++j) {
    F s = V::zero();
    int e = 0;
    for (; e + V::kWidth <= d; e += V::kWidth) s = V::fma(V::load(q + e), loadAs<V, KT>(keys, j * kv_row + e), s);
    if (e < d) s = V::fma(V::loadN(q + e, d - e), loadAsN<V, KT>(keys, j * kv_row + e, d - e), s);
    scores[j] = V::hsum(s) * scale;
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

// acc[0:d) += sum over j < n of p[j] * value row j, a slice of four vectors
// of d at a time kept in registers across the keys (no store-to-load chain
// through acc per key).
template <class V, DType KT>
inline void accumulateValues(float* acc, const float* p, const void* values, int64_t kv_row, int n,
                             int d) {
  using F = typename V::F;
  constexpr int W = V::kWidth;
  int e = 0;
  for (; e + 4 * W <= d; e += 4 * W) {
    F a0 = V::load(acc + e), a1 = V::load(acc + e + W), a2 = V::load(acc + e + 2 * W),
      a3 = V::load(acc + e + 3 * W);
    for (int j = 0; j < n; ++j) {
      const F pv = V::set1(p[j]);
      const int64_t r = j * kv_row + e;
      a0 = V::fma(pv, loadAs<V, KT>(values, r), a0);
      a1 = V::fma(pv, loadAs<V, KT>(values, r + W), a1);
      a2 = V::fma(pv, loadAs<V, KT>(values, r + 2 * W), a2);
      a3 = V::fma(pv, loadAs<V, KT>(values, r + 3 * W), a3);
    }
    V::store(acc + e, a0);
    V::store(acc + e + W, a1);
    V::store(acc + e + 2 * W, a2);
    V::store(acc + e + 3 * W, a3);
  }
  for (; e < d; e += W) {
    const int t = std::min(W, d - e);
    F a0 = V::loadN(acc + e, t);
    for (int j = 0; j < n; ++j) a0 = V::fma(V::set1(p[j]), loadAsN<V, KT>(values, j * kv_row + e, t), a0);
    V::storeN(acc + e, a0, t);
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

template <class V, DType KT>
void attendTyped(const AttendArgs& a) {
  using Elem = std::conditional_t<KT == DType::kF32, float, uint16_t>;
  const int d = a.head_dim;
  alignas(64) float acc[kMaxHeadDim];
  float scores[kMaxBlockSize];
  for (int i = a.q_begin; i < a.q_end; ++i) {
    const int n_keys = a.start_pos + i + 1;  // causal: up to and including itself
    for (int g = 0; g < a.group; ++g) {
      const int h = a.first_head + g;
      const float* q = a.q + i * a.row_stride + static_cast<int64_t>(h) * d;
      float running_max = -std::numeric_limits<float>::infinity();
      float total = 0.0f;
      std::fill(acc, acc + d, 0.0f);
      for (int p0 = 0; p0 < n_keys; p0 += a.block_size) {
        const int n = std::min(a.block_size, n_keys - p0);
        const char* block = a.cache + static_cast<size_t>(a.table[p0 / a.block_size]) * a.block_bytes;
        const Elem* keys = reinterpret_cast<const Elem*>(block + a.k_offset) +
                           static_cast<int64_t>(a.kv_head) * d;
        const Elem* values = reinterpret_cast<const Elem*>(block + a.v_offset) +
                             static_cast<int64_t>(a.kv_head) * d;
        scoreKeys<V, KT>(q, keys, a.kv_row, n, d, a.scale, scores);
        const float block_max = *std::max_element(scores, scores + n);
        const float new_max = std::max(running_max, block_max);
        // rescale what earlier blocks summed once per block; the first block
        // has nothing to rescale
        if (running_max != -std::numeric_limits<float>::infinity() && new_max > running_max) {
          const float keep = std::exp(running_max - new_max);
          total *= keep;
          scaleRow<V>(acc, keep, d);
        }
        total += expShifted<V>(scores, n, new_max);
        accumulateValues<V, KT>(acc, scores, values, a.kv_row, n, d);
        running_max = new_max;
      }
      float* o = a.out + i * a.row_stride + static_cast<int64_t>(h) * d;
      const float inv = 1.0f / total;
      for (int j = 0; j < d; ++j) o[j] = acc[j] * inv;
    }
  }
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
