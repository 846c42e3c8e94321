// The cpu kernels, written once over a vector type V and instantiated by
// kernels_{scalar,avx2,avx512}.cc with theirs. V provides:
//   F; kWidth; zero(); set1(f); load(p); loadN(p, n); store(p, v);
//   storeN(p, v, n); loadF16(p); loadF16N(p, n); loadBf16(p); loadBf16N(p, n);
//   storeF16(p, v); storeF16N(p, v, n) (rounded to nearest even);
//   add, sub, mul, div, max, fma(a, b, c) = a * b + c; hsum(v); exp(v);
//   kGemmRows, kGemmVecs: the prefill micro-kernel's register tile;
//   kBatchTileW: w rows of a decode batch's 4-row register tile (its 4 x
//   kBatchTileW accumulators and kBatchTileW w vectors fit the registers).
// Every function here is a template over V, and each V lives in its file's
// anonymous namespace, so instantiations compiled with different -m flags
// never merge at link time.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "common/dtype.h"
#include "common/status.h"
#include "kernels/cpu/kernel_table.h"

namespace tandem::kernels::cpu::impl {

constexpr int kMaxHeadDim = 512;
constexpr int kMaxBlockSize = 1024;

template <class V, DType T>
inline typename V::F loadAs(const void* base, int64_t i) {
  if constexpr (T == DType::kF32) return V::load(static_cast<const float*>(base) + i);
  if constexpr (T == DType::kF16) return V::loadF16(static_cast<const uint16_t*>(base) + i);
  if constexpr (T == DType::kBF16) return V::loadBf16(static_cast<const uint16_t*>(base) + i);
}

template <class V, DType T>
inline typename V::F loadAsN(const void* base, int64_t i, int n) {
  if constexpr (T == DType::kF32) return V::loadN(static_cast<const float*>(base) + i, n);
  if constexpr (T == DType::kF16) return V::loadF16N(static_cast<const uint16_t*>(base) + i, n);
  if constexpr (T == DType::kBF16) return V::loadBf16N(static_cast<const uint16_t*>(base) + i, n);
}

// calls fn.template operator()<T>() for the runtime dtype t.
template <class Fn>
inline void dispatchDType(DType t, Fn&& fn) {
  switch (t) {
    case DType::kF32: fn.template operator()<DType::kF32>(); return;
    case DType::kF16: fn.template operator()<DType::kF16>(); return;
    case DType::kBF16: fn.template operator()<DType::kBF16>(); return;
    default: TANDEM_CHECK(false && "dtype not supported by the cpu kernels");
  }
}

// one MR x NR tile of y: MR rows of x against NR rows of w, accumulated in
// registers over the whole of k, so each loaded w vector feeds MR fmas and
// each x vector NR fmas. pf.step() runs once per vector step of k (a
// software prefetch stream spread over the tile's arithmetic, or nothing).
// With 16-bit w and `keep`, the tile also stores its NR rows converted to
// F32 at keep[r * k ...] for later tiles.
struct NoPrefetch {
  void step() {}
};

// prefetches [next, end) a cache line a step.
struct LinePrefetch {
  const char* next;
  const char* end;
  void step() {
    if (next < end) {
      __builtin_prefetch(next);
      next += 64;
    }
  }
};

template <class V, DType WT, int MR, int NR, class Prefetch = NoPrefetch>
inline void matmulTile(const MatmulArgs& a, int64_t m0, int64_t n0, Prefetch&& prefetch = Prefetch{},
                       float* keep = nullptr) {
  using F = typename V::F;
  std::remove_cvref_t<Prefetch> pf = prefetch;  // in registers for the loop
  F acc[MR][NR];
  for (int i = 0; i < MR; ++i)
    for (int r = 0; r < NR; ++r) acc[i][r] = V::zero();
  const int64_t K = a.k;
  const float* x = a.x + m0 * K;
  int64_t k = 0;
  for (; k + V::kWidth <= K; k += V::kWidth) {
    pf.step();
    F wv[NR];
    for (int r = 0; r < NR; ++r) wv[r] = loadAs<V, WT>(a.w, (n0 + r) * K + k);
    if constexpr (WT != DType::kF32) {
      if (keep != nullptr) {
        for (int r = 0; r < NR; ++r) V::store(keep + r * K + k, wv[r]);
      }
    }
    for (int i = 0; i < MR; ++i) {
      const F xv = V::load(x + i * K + k);
      for (int r = 0; r < NR; ++r) acc[i][r] = V::fma(xv, wv[r], acc[i][r]);
    }
  }
  if (k < K) {
    const int n = static_cast<int>(K - k);
    F wv[NR];
    for (int r = 0; r < NR; ++r) wv[r] = loadAsN<V, WT>(a.w, (n0 + r) * K + k, n);
    if constexpr (WT != DType::kF32) {
      if (keep != nullptr) {
        for (int r = 0; r < NR; ++r) V::storeN(keep + r * K + k, wv[r], n);
      }
    }
    for (int i = 0; i < MR; ++i) {
      const F xv = V::loadN(x + i * K + k, n);
      for (int r = 0; r < NR; ++r) acc[i][r] = V::fma(xv, wv[r], acc[i][r]);
    }
  }
  prefetch = pf;
  for (int i = 0; i < MR; ++i) {
    float* y = a.y + (m0 + i) * a.n + n0;
    for (int r = 0; r < NR; ++r) {
      y[r] = V::hsum(acc[i][r]) + (a.bias != nullptr ? a.bias[n0 + r] : 0.0f);
    }
  }
}

// rows [m0, m1) of x against rows [n, n + NR) of w.
template <class V, DType WT, int NR, class Prefetch = NoPrefetch>
inline void matmulColumn(const MatmulArgs& a, int64_t m0, int64_t m1, int64_t n, Prefetch&& pf = Prefetch{}) {
  int64_t m = m0;
  for (; m + 4 <= m1; m += 4) matmulTile<V, WT, 4, NR>(a, m, n, pf);
  switch (m1 - m) {
    case 3: matmulTile<V, WT, 3, NR>(a, m, n, pf); break;
    case 2: matmulTile<V, WT, 2, NR>(a, m, n, pf); break;
    case 1: matmulTile<V, WT, 1, NR>(a, m, n, pf); break;
    default: break;
  }
}

// decode's gemv (one row of x): w is read as one sequential stream, row
// after row, with four accumulators per row so fma (and f16 conversion)
// latency hides without interleaving the streams of several rows; a
// software prefetch kPrefetchBytes ahead also covers the step into the next
// row, which the hardware prefetcher sees late.
template <class V, DType WT>
void gemvTyped(const MatmulArgs& a, int64_t n_begin, int64_t n_end) {
  using F = typename V::F;
  using Elem = std::conditional_t<WT == DType::kF32, float, uint16_t>;
  constexpr int W = V::kWidth;
  constexpr int64_t kPrefetchBytes = 8192;
  constexpr int kStepBytes = 4 * W * static_cast<int>(sizeof(Elem));
  const int64_t K = a.k;
  const float* x = a.x;
  const Elem* w = static_cast<const Elem*>(a.w);
  for (int64_t n = n_begin; n < n_end; ++n) {
    const Elem* row = w + n * K;
    F s0 = V::zero(), s1 = V::zero(), s2 = V::zero(), s3 = V::zero();
    int64_t k = 0;
    for (; k + 4 * W <= K; k += 4 * W) {
      if constexpr (W > 1) {
        const char* ahead = reinterpret_cast<const char*>(row + k) + kPrefetchBytes;
        for (int b = 0; b < kStepBytes; b += 64) __builtin_prefetch(ahead + b, 0, 2);
      }
      s0 = V::fma(V::load(x + k), loadAs<V, WT>(row, k), s0);
      s1 = V::fma(V::load(x + k + W), loadAs<V, WT>(row, k + W), s1);
      s2 = V::fma(V::load(x + k + 2 * W), loadAs<V, WT>(row, k + 2 * W), s2);
      s3 = V::fma(V::load(x + k + 3 * W), loadAs<V, WT>(row, k + 3 * W), s3);
    }
    for (; k + W <= K; k += W) s0 = V::fma(V::load(x + k), loadAs<V, WT>(row, k), s0);
    if (k < K) {
      const int r = static_cast<int>(K - k);
      s1 = V::fma(V::loadN(x + k, r), loadAsN<V, WT>(row, k, r), s1);
    }
    a.y[n] = V::hsum(V::add(V::add(s0, s1), V::add(s2, s3))) +
             (a.bias != nullptr ? a.bias[n] : 0.0f);
  }
}

// rows [n0, n0 + NR) of a 16-bit w (a.m > 4 rows of x) converted to F32
// once into a scratch block: the first 4-row tile of x reads the 16-bit rows
// and keeps their conversion, every later tile reads the block, so the
// conversion is paid once per w row per call and runs under the first
// tile's arithmetic. The NR rows are one contiguous run of 16-bit values;
// the next block's run (the task's next rows, or the ones just past its
// range) is prefetched a cache line per vector step of the tiles, so it
// arrives while this block's arithmetic runs (without it 40% of a 1-thread
// 16-row F16 decode step waited on these loads: bench/RESULTS.md, issue 20).
template <class V, DType WT, int NR>
inline void matmulConvertedColumn(const MatmulArgs& a, int64_t n0, float* block) {
  const int64_t total = NR * a.k;
  const char* next = reinterpret_cast<const char*>(static_cast<const uint16_t*>(a.w) + (n0 + NR) * a.k);
  LinePrefetch pf{next, next + total * static_cast<int64_t>(sizeof(uint16_t))};
  matmulTile<V, WT, 4, NR>(a, 0, n0, pf, block);
  MatmulArgs sub = a;
  sub.w = block;
  sub.w_dtype = DType::kF32;
  sub.y = a.y + n0;
  sub.bias = a.bias != nullptr ? a.bias + n0 : nullptr;
  matmulColumn<V, DType::kF32, NR>(sub, 4, a.m, 0, pf);
}

template <class V, DType WT>
void matmulTyped(const MatmulArgs& a, int64_t n_begin, int64_t n_end) {
  if (a.m == 1) {
    gemvTyped<V, WT>(a, n_begin, n_end);
    return;
  }
  // more than one 4-row tile of x (m < kGemmMinRows here, so x fits in L2):
  // 16-bit weights are converted once per call.
  if constexpr (WT != DType::kF32) {
    if (a.m > 4) {
      constexpr int NR = V::kBatchTileW;
      float* block = threadScratch(3, static_cast<size_t>(a.k) * NR);
      int64_t n = n_begin;
      for (; n + NR <= n_end; n += NR) matmulConvertedColumn<V, WT, NR>(a, n, block);
      for (; n < n_end; ++n) matmulConvertedColumn<V, WT, 1>(a, n, block);
      return;
    }
  }
  // a chunk of x rows stays in L2 while the panel of w rows it meets stays
  // in L1; for decode (m of 1..4) this is a plain stream over w.
  constexpr int64_t kRowChunk = 64;
  for (int64_t mc = 0; mc < a.m; mc += kRowChunk) {
    const int64_t me = std::min(a.m, mc + kRowChunk);
    int64_t n = n_begin;
    // two rows of x: more w rows in flight hide fma latency
    if (me - mc <= 2) {
      for (; n + 8 <= n_end; n += 8) matmulColumn<V, WT, 8>(a, mc, me, n);
    }
    constexpr int NR = V::kBatchTileW;
    for (; n + NR <= n_end; n += NR) matmulColumn<V, WT, NR>(a, mc, me, n);
    for (; n < n_end; ++n) matmulColumn<V, WT, 1>(a, mc, me, n);
  }
}

template <class V>
inline float sumSquares(const float* x, int64_t d) {
  typename V::F s = V::zero();
  int64_t k = 0;
  for (; k + V::kWidth <= d; k += V::kWidth) {
    const auto v = V::load(x + k);
    s = V::fma(v, v, s);
  }
  if (k < d) {
    const auto v = V::loadN(x + k, static_cast<int>(d - k));
    s = V::fma(v, v, s);
  }
  return V::hsum(s);
}

template <class V>
void rmsNorm(const float* x, const void* w, DType w_dtype, int64_t d, float eps, float* out,
             int64_t rows) {
  dispatchDType(w_dtype, [&]<DType WT>() {
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x + r * d;
      float* o = out + r * d;
      const auto inv = V::set1(1.0f / std::sqrt(sumSquares<V>(xr, d) / d + eps));
      int64_t k = 0;
      for (; k + V::kWidth <= d; k += V::kWidth) {
        V::store(o + k, V::mul(V::mul(V::load(xr + k), inv), loadAs<V, WT>(w, k)));
      }
      if (k < d) {
        const int n = static_cast<int>(d - k);
        V::storeN(o + k, V::mul(V::mul(V::loadN(xr + k, n), inv), loadAsN<V, WT>(w, k, n)), n);
      }
    }
  });
}

template <class V>
inline typename V::F silu(typename V::F g) {
  const auto one = V::set1(1.0f);
  return V::div(g, V::add(one, V::exp(V::sub(V::zero(), g))));
}

template <class V>
void siluMul(const float* gate, const float* up, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + V::kWidth <= n; i += V::kWidth) {
    V::store(out + i, V::mul(silu<V>(V::load(gate + i)), V::load(up + i)));
  }
  if (i < n) {
    const int r = static_cast<int>(n - i);
    V::storeN(out + i, V::mul(silu<V>(V::loadN(gate + i, r)), V::loadN(up + i, r)), r);
  }
}

template <class V>
void add(const float* a, const float* b, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + V::kWidth <= n; i += V::kWidth) V::store(out + i, V::add(V::load(a + i), V::load(b + i)));
  if (i < n) {
    const int r = static_cast<int>(n - i);
    V::storeN(out + i, V::add(V::loadN(a + i, r), V::loadN(b + i, r)), r);
  }
}

template <class V>
void toF32(const void* src, DType dtype, float* dst, int64_t n) {
  dispatchDType(dtype, [&]<DType T>() {
    int64_t i = 0;
    for (; i + V::kWidth <= n; i += V::kWidth) V::store(dst + i, loadAs<V, T>(src, i));
    if (i < n) {
      const int r = static_cast<int>(n - i);
      V::storeN(dst + i, loadAsN<V, T>(src, i, r), r);
    }
  });
}

// F16 a vector at a time (the processor's conversion; F16C on x86); BF16
// one value at a time (no store in the vector types: nothing hot writes it).
template <class V>
void fromF32(const float* src, DType dtype, void* dst, int64_t n) {
  switch (dtype) {
    case DType::kF32: std::memcpy(dst, src, n * sizeof(float)); return;
    case DType::kF16: {
      auto* h = static_cast<uint16_t*>(dst);
      int64_t i = 0;
      for (; i + V::kWidth <= n; i += V::kWidth) V::storeF16(h + i, V::load(src + i));
      if (i < n) {
        const int r = static_cast<int>(n - i);
        V::storeF16N(h + i, V::loadN(src + i, r), r);
      }
      return;
    }
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) static_cast<uint16_t*>(dst)[i] = f32ToBf16(src[i]);
      return;
    default: TANDEM_CHECK(false && "fromF32: f32, f16 or bf16");
  }
}

}  // namespace tandem::kernels::cpu::impl

#include "kernels/cpu/gemm_template.h"
#include "kernels/cpu/attention_template.h"
