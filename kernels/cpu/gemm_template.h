// The prefill matmul (m of kGemmMinRows and more), over a vector type V like
// kernel_templates.h (which includes this file). W is converted to F32 and
// packed a panel of kGemmVecs * kWidth rows at a time, k-major, so the
// micro-kernel reads one contiguous line of the panel per k and broadcasts
// single x values against it: kGemmRows x kGemmVecs accumulators stay in
// registers for the whole of k and each packed w vector feeds kGemmRows fmas.
// The packing (and any F16/BF16 conversion) is paid once per panel, not once
// per row of x.
#pragma once

namespace tandem::kernels::cpu::impl {

// packs rows [n0, n0 + rows) of w (rows <= P) as panel[k * P + j], zero
// padding rows past the end.
template <class V, DType WT, int P>
void packPanel(const MatmulArgs& a, int64_t n0, int rows, float* panel, float* row) {
  const int64_t K = a.k;
  for (int j = 0; j < P; ++j) {
    if (j >= rows) {
      for (int64_t k = 0; k < K; ++k) panel[k * P + j] = 0.0f;
      continue;
    }
    // convert the row with vector loads, then scatter it into column j
    const int64_t base = (n0 + j) * K;
    int64_t k = 0;
    for (; k + V::kWidth <= K; k += V::kWidth) V::store(row + k, loadAs<V, WT>(a.w, base + k));
    if (k < K) V::storeN(row + k, loadAsN<V, WT>(a.w, base + k, static_cast<int>(K - k)), static_cast<int>(K - k));
    for (k = 0; k < K; ++k) panel[k * P + j] = row[k];
  }
}

// y[m0 : m0 + MR, n0 : n0 + cols) from MR rows of x (row stride ldx) and a
// packed panel.
template <class V, int MR, int NV>
inline void gemmMicro(const float* x, int64_t ldx, const float* panel, int64_t K,
                      const float* bias, float* y, int64_t ldy, int rows, int cols) {
  using F = typename V::F;
  constexpr int P = NV * V::kWidth;
  F acc[MR][NV];
  for (int i = 0; i < MR; ++i)
    for (int j = 0; j < NV; ++j) acc[i][j] = V::zero();
  for (int64_t k = 0; k < K; ++k) {
    F wv[NV];
    for (int j = 0; j < NV; ++j) wv[j] = V::load(panel + k * P + j * V::kWidth);
    for (int i = 0; i < MR; ++i) {
      const F xb = V::set1(x[i * ldx + k]);
      for (int j = 0; j < NV; ++j) acc[i][j] = V::fma(xb, wv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < NV; ++j) {
      const int c = cols - j * V::kWidth;
      if (c <= 0) break;
      F v = acc[i][j];
      if (bias != nullptr) {
        v = V::add(v, c >= V::kWidth ? V::load(bias + j * V::kWidth) : V::loadN(bias + j * V::kWidth, c));
      }
      float* out = y + i * ldy + j * V::kWidth;
      if (c >= V::kWidth) {
        V::store(out, v);
      } else {
        V::storeN(out, v, c);
      }
    }
  }
}

template <class V, DType WT>
void gemmTyped(const MatmulArgs& a, int64_t n_begin, int64_t n_end) {
  constexpr int MR = V::kGemmRows, NV = V::kGemmVecs, P = NV * V::kWidth;
  const int64_t K = a.k;
  float* panel = threadScratch(0, static_cast<size_t>(K) * P);
  float* row = threadScratch(1, static_cast<size_t>(K));
  float* x_pad = threadScratch(2, static_cast<size_t>(K) * MR);
  for (int64_t n0 = n_begin; n0 < n_end; n0 += P) {
    const int cols = static_cast<int>(std::min<int64_t>(P, n_end - n0));
    packPanel<V, WT, P>(a, n0, cols, panel, row);
    const float* bias = a.bias != nullptr ? a.bias + n0 : nullptr;
    int64_t m = 0;
    for (; m + MR <= a.m; m += MR) {
      gemmMicro<V, MR, NV>(a.x + m * K, K, panel, K, bias, a.y + m * a.n + n0, a.n, MR, cols);
    }
    if (m < a.m) {
      // the last rows, zero padded to a full tile
      const int rows = static_cast<int>(a.m - m);
      std::memset(x_pad, 0, static_cast<size_t>(MR) * K * sizeof(float));
      std::memcpy(x_pad, a.x + m * K, rows * K * sizeof(float));
      gemmMicro<V, MR, NV>(x_pad, K, panel, K, bias, a.y + m * a.n + n0, a.n, rows, cols);
    }
  }
}

// from this many rows of x, packing w panels pays for itself (decode
// batches below it stream w with the register-tiled dot kernel).
constexpr int64_t kGemmMinRows = 32;

template <class V>
void matmul(const MatmulArgs& a, int64_t n_begin, int64_t n_end) {
  dispatchDType(a.w_dtype, [&]<DType WT>() {
    if (a.m >= kGemmMinRows) {
      gemmTyped<V, WT>(a, n_begin, n_end);
    } else {
      matmulTyped<V, WT>(a, n_begin, n_end);
    }
  });
}

}  // namespace tandem::kernels::cpu::impl
