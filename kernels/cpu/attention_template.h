// Paged attention over one (sequence, kv head, query range), written over a
// vector type V like kernel_templates.h (which includes this file). Softmax
// is online (flash style) a kv block at a time: scores of one block, then
// one rescale of the running sum and output, so nothing grows with context.
#pragma once

namespace tandem::kernels::cpu::impl {

template <class V, DType KT>
inline float dotRow(const float* q, const void* k, int d) {
  typename V::F s = V::zero();
  int j = 0;
  for (; j + V::kWidth <= d; j += V::kWidth) s = V::fma(V::load(q + j), loadAs<V, KT>(k, j), s);
  if (j < d) s = V::fma(V::loadN(q + j, d - j), loadAsN<V, KT>(k, j, d - j), s);
  return V::hsum(s);
}

// acc[0:d) = acc * keep + p * v
template <class V, DType KT>
inline void scaleAddRow(float* acc, float keep, float p, const void* v, int d) {
  const auto kv = V::set1(keep);
  const auto pv = V::set1(p);
  int j = 0;
  for (; j + V::kWidth <= d; j += V::kWidth) {
    V::store(acc + j, V::fma(pv, loadAs<V, KT>(v, j), V::mul(kv, V::load(acc + j))));
  }
  if (j < d) {
    const int n = d - j;
    V::storeN(acc + j, V::fma(pv, loadAsN<V, KT>(v, j, n), V::mul(kv, V::loadN(acc + j, n))), n);
  }
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
        float block_max = -std::numeric_limits<float>::infinity();
        for (int j = 0; j < n; ++j) {
          scores[j] = dotRow<V, KT>(q, keys + j * a.kv_row, d) * a.scale;
          block_max = std::max(block_max, scores[j]);
        }
        const float new_max = std::max(running_max, block_max);
        // the first block has nothing to rescale (exp(-inf) would be 0 anyway)
        float keep = running_max == -std::numeric_limits<float>::infinity()
                         ? 0.0f
                         : std::exp(running_max - new_max);
        total *= keep;
        for (int j = 0; j < n; ++j) {
          const float p = std::exp(scores[j] - new_max);
          total += p;
          scaleAddRow<V, KT>(acc, keep, p, values + j * a.kv_row, d);
          keep = 1.0f;
        }
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
      level, &matmul<V>, &rmsNorm<V>, &siluMul<V>, &add<V>, &toF32<V>, &attend<V>,
  };
}

}  // namespace tandem::kernels::cpu::impl
