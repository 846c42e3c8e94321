#include "kernels/cpu/quant_matmul.h"

#include <algorithm>
#include <vector>

#include "common/quant_blocks.h"
#include "common/status.h"
#include "kernels/cpu/quant_dot.h"

namespace tandem::kernels::cpu {

namespace {

// weight rows per dequantized panel of the prefill path: 64 rows of up to a
// few thousand floats stay in L2 while the gemm sweeps the rows of x.
constexpr int64_t kPanelRows = 64;

// per-thread scratch of this file (built with baseline flags).
std::vector<float>& panelScratch() {
  thread_local std::vector<float> scratch;
  return scratch;
}

void dotRows(const MatmulArgs& a, const QuantDotTable& dots, const void* xq, int64_t n_begin,
             int64_t n_end) {
  const size_t row_bytes = rowBytes(a.w_dtype, static_cast<size_t>(a.k));
  const auto* w = static_cast<const char*>(a.w);
  const int64_t x_blocks = usesBlock256(a.w_dtype) ? a.k / 256 : a.k / 32;
  for (int64_t j = n_begin; j < n_end; ++j) {
    const void* wr = w + j * row_bytes;
    const float b = a.bias != nullptr ? a.bias[j] : 0.0f;
    for (int64_t r = 0; r < a.m; ++r) {
      float v = 0.0f;
      switch (a.w_dtype) {
        case DType::kQ8_0:
          v = dots.dotQ8_0(wr, static_cast<const ActBlock32*>(xq) + r * x_blocks, a.k);
          break;
        case DType::kQ4_0:
          v = dots.dotQ4_0(wr, static_cast<const ActBlock32*>(xq) + r * x_blocks, a.k);
          break;
        case DType::kQ4_K:
          v = dots.dotQ4_K(wr, static_cast<const ActBlock256*>(xq) + r * x_blocks, a.k);
          break;
        case DType::kQ6_K:
          v = dots.dotQ6_K(wr, static_cast<const ActBlock256*>(xq) + r * x_blocks, a.k);
          break;
        default: TANDEM_CHECK(false && "not a quantized dtype");
      }
      a.y[r * a.n + j] = v + b;
    }
  }
}

void panelGemm(const MatmulArgs& a, const KernelTable& dense, int64_t n_begin, int64_t n_end) {
  const size_t row_bytes = rowBytes(a.w_dtype, static_cast<size_t>(a.k));
  const auto* w = static_cast<const char*>(a.w);
  std::vector<float>& scratch = panelScratch();
  for (int64_t p = n_begin; p < n_end; p += kPanelRows) {
    const int64_t rows = std::min(kPanelRows, n_end - p);
    const size_t need = static_cast<size_t>(rows * a.k + a.m * rows);
    if (scratch.size() < need) scratch.resize(need);
    float* panel = scratch.data();
    float* out = panel + rows * a.k;
    for (int64_t j = 0; j < rows; ++j) {
      quant::dequantizeRow(a.w_dtype, w + (p + j) * row_bytes, panel + j * a.k, a.k);
    }
    const MatmulArgs sub{a.x, panel, DType::kF32, a.bias != nullptr ? a.bias + p : nullptr,
                         out, a.m, rows, a.k};
    dense.matmul(sub, 0, rows);
    for (int64_t r = 0; r < a.m; ++r) {
      std::copy(out + r * rows, out + (r + 1) * rows, a.y + r * a.n + p);
    }
  }
}

}  // namespace

void quantMatmul(const MatmulArgs& args, const KernelTable& dense, int threads,
                 const ParallelTasks& parallel) {
  TANDEM_CHECK(quant::isQuantized(args.w_dtype) && args.k % quant::blockValues(args.w_dtype) == 0);
  if (args.m == 0 || args.n == 0) return;
  if (args.m > kQuantDotMaxRows) {
    const int64_t panels = (args.n + kPanelRows - 1) / kPanelRows;
    const int64_t per_task = std::max<int64_t>(1, panels / (int64_t{threads} * 4));
    const int tasks = static_cast<int>((panels + per_task - 1) / per_task);
    parallel(tasks, [&](int t) {
      const int64_t begin = t * per_task * kPanelRows;
      panelGemm(args, dense, begin, std::min(args.n, begin + per_task * kPanelRows));
    });
    return;
  }
  const QuantDotTable& dots = quantDotsFor(dense.level);
  // the activation rows, quantized once for every task.
  std::vector<ActBlock32> x32;
  std::vector<ActBlock256> x256;
  const void* xq = nullptr;
  if (usesBlock256(args.w_dtype)) {
    x256.resize(static_cast<size_t>(args.m * args.k / 256));
    for (int64_t r = 0; r < args.m; ++r) {
      dots.quantize256(args.x + r * args.k, x256.data() + r * (args.k / 256), args.k);
    }
    xq = x256.data();
  } else {
    x32.resize(static_cast<size_t>(args.m * args.k / 32));
    for (int64_t r = 0; r < args.m; ++r) {
      dots.quantize32(args.x + r * args.k, x32.data() + r * (args.k / 32), args.k);
    }
    xq = x32.data();
  }
  // small row ranges balance the threads: decode is pure weight streaming.
  const int64_t wanted = int64_t{threads} * 8;
  const int64_t chunk = std::max<int64_t>(4, (args.n + wanted - 1) / wanted);
  const int tasks = static_cast<int>((args.n + chunk - 1) / chunk);
  if (args.m * args.n * args.k < (1 << 16)) {
    dotRows(args, dots, xq, 0, args.n);
    return;
  }
  parallel(tasks, [&](int t) {
    const int64_t begin = t * chunk;
    dotRows(args, dots, xq, begin, std::min(args.n, begin + chunk));
  });
}

}  // namespace tandem::kernels::cpu
