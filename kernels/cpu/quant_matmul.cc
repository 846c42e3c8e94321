#include "kernels/cpu/quant_matmul.h"

#include <algorithm>
#include <new>
#include <span>
#include <vector>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "common/quant_blocks.h"
#include "common/status.h"
#include "kernels/cpu/quant_amx.h"
#include "kernels/cpu/quant_dot.h"

namespace tandem::kernels::cpu {

namespace {

// weight rows per dequantized panel of the prefill path: 64 rows of up to a
// few thousand floats stay in L2 while the gemm sweeps the rows of x.
constexpr int64_t kPanelRows = 64;

// rows of x one prefill tile call takes: 256 quantized rows of a few
// thousand values (~0.6 MB at k 2048) stay in L2.
constexpr int64_t kPrefillTileRows = 256;

// bytes from a 64-byte boundary, freed with their owner.
class AlignedBytes {
 public:
  explicit AlignedBytes(size_t n) : p_(::operator new(std::max<size_t>(n, 1), kAlign)) {}
  ~AlignedBytes() { ::operator delete(p_, kAlign); }
  AlignedBytes(const AlignedBytes&) = delete;
  AlignedBytes& operator=(const AlignedBytes&) = delete;
  void* get() const { return p_; }

 private:
  static constexpr std::align_val_t kAlign{64};
  void* p_;
};

// per-thread scratch of this file (built with baseline flags).
std::vector<float>& panelScratch() {
  thread_local std::vector<float> scratch;
  return scratch;
}

// weight rows whose outputs one dot or tile call leaves together (the dots
// leave a weight row's outputs for consecutive rows of x together, y wants a
// row of x's outputs for consecutive weight rows), and how many of those are
// collected before they are written to y: a row of y then takes 16 floats at
// once. (4 at a time put a batch's 16 rows of y, n floats apart, into one L1
// set when n is a multiple of 1024, each line missed 4 times: the AMX kernels'
// scalar stores cost them 20%: quant_dot_bench --k 2048 --weights 2048,
// bench/RESULTS.md "rows of y stored whole; AMX-INT8 for Q6_K".)
constexpr int64_t kOutTileCols = 4;
constexpr int64_t kStoreCols = 16;

// y[r][j0 + c] = tile[c][r] + bias[j0 + c] for r < m, c < cols: 4x4 blocks
// transposed in registers and stored as 4 floats a row of x (instead of
// a scalar store a value), a row's blocks one after another; the rest
// scalar.
void storeOutTile(const float* tile, int64_t tile_stride, int64_t cols, const float* bias, int64_t m, float* y,
                  int64_t n, int64_t j0) {
  const auto scalar = [&](int64_t r, int64_t c) {
    y[r * n + j0 + c] = tile[c * tile_stride + r] + (bias != nullptr ? bias[j0 + c] : 0.0f);
  };
  int64_t r = 0;
#if defined(__SSE2__)
  const int64_t blocked = cols / 4 * 4;
  for (; r + 4 <= m; r += 4) {
    for (int64_t c = 0; c < blocked; c += 4) {
      const float* t = tile + c * tile_stride + r;
      const __m128 b = bias != nullptr ? _mm_loadu_ps(bias + j0 + c) : _mm_setzero_ps();
      __m128 c0 = _mm_loadu_ps(t), c1 = _mm_loadu_ps(t + tile_stride);
      __m128 c2 = _mm_loadu_ps(t + 2 * tile_stride), c3 = _mm_loadu_ps(t + 3 * tile_stride);
      _MM_TRANSPOSE4_PS(c0, c1, c2, c3);
      float* out = y + r * n + j0 + c;
      _mm_storeu_ps(out, _mm_add_ps(c0, b));
      _mm_storeu_ps(out + n, _mm_add_ps(c1, b));
      _mm_storeu_ps(out + 2 * n, _mm_add_ps(c2, b));
      _mm_storeu_ps(out + 3 * n, _mm_add_ps(c3, b));
    }
    for (int64_t c = blocked; c < cols; ++c) {
      for (int64_t i = 0; i < 4; ++i) scalar(r + i, c);
    }
  }
#endif
  for (; r < m; ++r) {
    for (int64_t c = 0; c < cols; ++c) scalar(r, c);
  }
}

// y rows [0, m) x weight rows [n_begin, n_end): each weight row is read from
// memory once and its blocks unpacked once per `max_rows` (the table's rows)
// rows of x; with a `tile` (and at least kTileMinRows rows of x), once for
// all rows, and kOutTileCols weight rows share each load of x.
template <typename ActBlock>
void dotRowRange(const MatmulArgs& a, DotRowsFn<ActBlock> dot, int max_rows, DotTileFn<ActBlock> tile,
                 const ActBlock* xq, int64_t n_begin, int64_t n_end) {
  static_assert(kOutTileCols == kTileWeights && kQuantDotMaxRows <= kTileRows);
  const size_t row_bytes = rowBytes(a.w_dtype, static_cast<size_t>(a.k));
  const auto* w = static_cast<const char*>(a.w);
  const int64_t x_blocks = a.k / (usesBlock256(a.w_dtype) ? 256 : 32);
  alignas(16) float tile_out[kStoreCols][kQuantDotMaxRows];
  const bool tiled = tile != nullptr && a.m >= kTileMinRows && a.k % 256 == 0;
  for (int64_t s0 = n_begin; s0 < n_end; s0 += kStoreCols) {
    const int64_t s_end = std::min(n_end, s0 + kStoreCols);
    for (int64_t j0 = s0; j0 < s_end; j0 += kOutTileCols) {
      const int64_t cols = std::min(kOutTileCols, s_end - j0);
      float* out = tile_out[j0 - s0];
      if (tiled) {
        const void* rows[kOutTileCols];
        for (int64_t c = 0; c < cols; ++c) rows[c] = w + (j0 + c) * row_bytes;
        tile(rows, static_cast<int>(cols), xq, x_blocks, static_cast<int>(a.m), a.k, out, kQuantDotMaxRows);
        continue;
      }
      for (int64_t c = 0; c < cols; ++c) {
        const void* wr = w + (j0 + c) * row_bytes;
        for (int64_t r0 = 0; r0 < a.m; r0 += max_rows) {
          const int rows = static_cast<int>(std::min<int64_t>(max_rows, a.m - r0));
          dot(wr, xq + r0 * x_blocks, x_blocks, rows, a.k, out + c * kQuantDotMaxRows + r0);
        }
      }
    }
    storeOutTile(tile_out[0], kQuantDotMaxRows, s_end - s0, a.bias, a.m, a.y, a.n, s0);
  }
}

DotRowsFn<ActBlock32> dot32For(const QuantDotTable& dots, DType t) {
  return t == DType::kQ8_0 ? dots.dotQ8_0 : dots.dotQ4_0;
}

DotTileFn<ActBlock32> tile32For(const QuantDotTable& dots, DType t) {
  return t == DType::kQ8_0 ? dots.tileQ8_0 : dots.tileQ4_0;
}

DotRowsFn<ActBlock256> dot256For(const QuantDotTable& dots, DType t) {
  return t == DType::kQ4_K ? dots.dotQ4_K : dots.dotQ6_K;
}

DotTileFn<ActBlock256> tile256For(const QuantDotTable& dots, DType t) {
  return t == DType::kQ4_K ? dots.tileQ4_K : nullptr;
}

// edges of the row ranges of a batch's dots: each a 1/(2 threads) share
// of the rows left, a multiple of kOutTileCols, at least kMinGuidedRows.
constexpr int64_t kMinGuidedRows = 8;

std::vector<int64_t> guidedEdges(int64_t n, int threads) {
  std::vector<int64_t> edges{0};
  while (edges.back() < n) {
    const int64_t left = n - edges.back();
    int64_t size = std::max(kMinGuidedRows, left / (2 * int64_t{threads}));
    size = (size + kOutTileCols - 1) / kOutTileCols * kOutTileCols;
    edges.push_back(std::min(n, edges.back() + size));
  }
  return edges;
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

// bytes of m rows of k activations quantized for a weight of dtype w.
size_t quantizedRowsBytes(DType w, int64_t m, int64_t k) {
  return usesBlock256(w) ? static_cast<size_t>(m * (k / 256)) * sizeof(ActBlock256)
                         : static_cast<size_t>(m * (k / 32)) * sizeof(ActBlock32);
}

// rows [begin, end) of x (k values a row) quantized by `dots` into `out`
// (row r at its offset), to the blocks a weight of dtype w takes.
void quantizeRows(const QuantDotTable& dots, DType w, const float* x, int64_t k, int64_t begin, int64_t end,
                  void* out) {
  for (int64_t r = begin; r < end; ++r) {
    if (usesBlock256(w)) {
      dots.quantize256(x + r * k, static_cast<ActBlock256*>(out) + r * (k / 256), k);
    } else {
      dots.quantize32(x + r * k, static_cast<ActBlock32*>(out) + r * (k / 32), k);
    }
  }
}

// prefill with tiles (quantized x in x32): weight rows [begin, end), 4 at a
// time against up to kPrefillTileRows rows of x, so each chunk of the 4
// weight rows is unpacked once for all of those rows, and they (~0.6 MB at
// k 2048) stay in L2 while the weight rows sweep them.
void prefillTileRange(const MatmulArgs& a, DotTileFn<ActBlock32> tile, const ActBlock32* x32, int64_t begin,
                      int64_t end) {
  const int64_t x_blocks = a.k / 32;
  std::vector<float>& out = panelScratch();
  if (out.size() < static_cast<size_t>(kOutTileCols * kPrefillTileRows)) out.resize(kOutTileCols * kPrefillTileRows);
  const auto* w = static_cast<const char*>(a.w);
  const size_t row_bytes = rowBytes(a.w_dtype, static_cast<size_t>(a.k));
  for (int64_t q0 = 0; q0 < a.m; q0 += kPrefillTileRows) {
    const int64_t q_rows = std::min(kPrefillTileRows, a.m - q0);
    for (int64_t j0 = begin; j0 < end; j0 += kOutTileCols) {
      const int64_t cols = std::min(kOutTileCols, end - j0);
      const void* rows[kOutTileCols];
      for (int64_t c = 0; c < cols; ++c) rows[c] = w + (j0 + c) * row_bytes;
      tile(rows, static_cast<int>(cols), x32 + q0 * x_blocks, x_blocks, static_cast<int>(q_rows), a.k, out.data(),
           q_rows);
      storeOutTile(out.data(), q_rows, cols, a.bias, q_rows, a.y + q0 * a.n, a.n, j0);
    }
  }
}

// prefill with dot calls (quantized x in x_buffer): weight rows [begin,
// end), a 64-row panel at a time against every kQuantDotMaxRows rows of x
// in turn (the panel stays in L2 and those rows of x in L1).
void prefillDotRange(const MatmulArgs& a, const QuantDotTable& dots, const void* x_buffer, int64_t begin,
                     int64_t end) {
  const bool block256 = usesBlock256(a.w_dtype);
  const int64_t x_blocks = a.k / (block256 ? 256 : 32);
  for (int64_t p = begin; p < end; p += kPanelRows) {
    const int64_t p_end = std::min(end, p + kPanelRows);
    for (int64_t r0 = 0; r0 < a.m; r0 += kQuantDotMaxRows) {
      MatmulArgs sub = a;
      sub.m = std::min(kQuantDotMaxRows, a.m - r0);
      sub.y = a.y + r0 * a.n;
      if (block256) {
        const auto* x256 = static_cast<const ActBlock256*>(x_buffer) + r0 * x_blocks;
        dotRowRange(sub, dot256For(dots, a.w_dtype), dots.rows, tile256For(dots, a.w_dtype), x256, p, p_end);
      } else {
        const auto* x32 = static_cast<const ActBlock32*>(x_buffer) + r0 * x_blocks;
        dotRowRange(sub, dot32For(dots, a.w_dtype), dots.rows, tile32For(dots, a.w_dtype), x32, p, p_end);
      }
    }
  }
}

// the prefill path of the integer dots: x quantized once (by the tasks),
// then each task its panels of weight rows, as tiles where the table has
// them for the weight's kind, else as dot calls.
void prefillDots(const MatmulArgs& a, const QuantDotTable& dots, int threads, const ParallelTasks& parallel) {
  AlignedBytes x_buffer(quantizedRowsBytes(a.w_dtype, a.m, a.k));
  const int64_t per_task_q = std::max<int64_t>(1, (a.m + threads * 4 - 1) / (threads * 4));
  parallel(static_cast<int>((a.m + per_task_q - 1) / per_task_q), [&](int t) {
    quantizeRows(dots, a.w_dtype, a.x, a.k, t * per_task_q, std::min(a.m, (t + 1) * per_task_q), x_buffer.get());
  });
  const bool block256 = usesBlock256(a.w_dtype);
  const int64_t panels = (a.n + kPanelRows - 1) / kPanelRows;
  const int64_t per_task = std::max<int64_t>(1, panels / (int64_t{threads} * 4));
  const int tasks = static_cast<int>((panels + per_task - 1) / per_task);
  const DotTileFn<ActBlock32> tile = block256 || a.k % 256 != 0 ? nullptr : tile32For(dots, a.w_dtype);
  parallel(tasks, [&](int t) {
    const int64_t begin = t * per_task * kPanelRows;
    const int64_t end = std::min(a.n, begin + per_task * kPanelRows);
    if (tile != nullptr) {
      prefillTileRange(a, tile, static_cast<const ActBlock32*>(x_buffer.get()), begin, end);
    } else {
      prefillDotRange(a, dots, x_buffer.get(), begin, end);
    }
  });
}

}  // namespace

size_t quantizedActivationBytes(DType w, int64_t m, int64_t k) { return quantizedRowsBytes(w, m, k); }

void quantizeActivations(const QuantDotTable& dots, DType w, const float* x, int64_t k, int64_t begin,
                         int64_t end, void* out) {
  quantizeRows(dots, w, x, k, begin, end, out);
}

void quantMatmulRowsQuantized(const MatmulArgs& args, const QuantDotTable& dots, const void* xq,
                              int64_t begin, int64_t end) {
  TANDEM_CHECK(quant::isQuantized(args.w_dtype) && args.k % quant::blockValues(args.w_dtype) == 0);
  if (args.m == 0 || begin >= end) return;
  prefillDotRange(args, dots, xq, begin, end);
}

bool canGroupQuantMatmuls(std::span<const MatmulArgs> group) {
  if (group.empty() || group[0].m > kQuantDotMaxRows || !quant::isQuantized(group[0].w_dtype)) return false;
  const bool block256 = usesBlock256(group[0].w_dtype);
  for (const MatmulArgs& a : group) {
    if (a.x != group[0].x || a.m != group[0].m || a.k != group[0].k || !quant::isQuantized(a.w_dtype) ||
        usesBlock256(a.w_dtype) != block256 || a.k % quant::blockValues(a.w_dtype) != 0) {
      return false;
    }
  }
  return true;
}

void quantMatmul(const MatmulArgs& args, const KernelTable& dense, bool amx, int threads,
                 const ParallelTasks& parallel) {
  TANDEM_CHECK(quant::isQuantized(args.w_dtype) && args.k % quant::blockValues(args.w_dtype) == 0);
  if (args.m == 0 || args.n == 0) return;
  if (args.m <= kQuantDotMaxRows) {
    quantMatmulGroup({&args, 1}, dense, amx, threads, parallel);
    return;
  }
  const QuantDotTable& dots = quantDotsFor(dense.level);
  if (usesBlock256(args.w_dtype) ? dots.prefill256 : dots.prefill32) {
    prefillDots(args, dots, threads, parallel);
    return;
  }
  const int64_t panels = (args.n + kPanelRows - 1) / kPanelRows;
  const int64_t per_task = std::max<int64_t>(1, panels / (int64_t{threads} * 4));
  const int tasks = static_cast<int>((panels + per_task - 1) / per_task);
  parallel(tasks, [&](int t) {
    const int64_t begin = t * per_task * kPanelRows;
    panelGemm(args, dense, begin, std::min(args.n, begin + per_task * kPanelRows));
  });
}

void quantMatmulGroup(std::span<const MatmulArgs> group, const KernelTable& dense, bool amx, int threads,
                      const ParallelTasks& parallel) {
  TANDEM_CHECK(canGroupQuantMatmuls(group));
  const MatmulArgs& first = group[0];
  int64_t rows = 0, work = 0;
  for (const MatmulArgs& a : group) {
    rows += a.n;
    work += a.m * a.n * a.k;
  }
  if (first.m == 0 || rows == 0) return;
  const QuantDotTable& table = quantDotsFor(dense.level);
  const QuantDotTable& dots = first.m == 1 && table.single_row != nullptr ? *table.single_row : table;
  // the activation rows, quantized once for every weight and task, from a
  // cache line (the grouped runs' 256-bit loads then never straddle one).
  const bool block256 = usesBlock256(first.w_dtype);
  AlignedBytes x_buffer(quantizedRowsBytes(first.w_dtype, first.m, first.k));
  quantizeRows(dots, first.w_dtype, first.x, first.k, 0, first.m, x_buffer.get());
  auto* x32 = static_cast<ActBlock32*>(x_buffer.get());
  auto* x256 = static_cast<ActBlock256*>(x_buffer.get());
  // Q4_K, Q6_K and Q8_0 weights of a batch on the AMX-INT8 tiles where
  // there are some (quant_amx.h): x laid out for them once
  thread_local std::vector<int8_t> tile_bytes;
  thread_local std::vector<float> tile_floats;
  AmxBlock256Activations k_tiles;
  AmxQ8_0Activations q8_0_tiles;
  const auto has = [&](DType t) {
    return std::any_of(group.begin(), group.end(), [t](const MatmulArgs& a) { return a.w_dtype == t; });
  };
  if (amx && dense.level == SimdLevel::kAvx512 && amxInt8Usable()) {
    const int m = static_cast<int>(first.m);
    if ((has(DType::kQ4_K) && m >= kAmxInt8Q4KMinRows) || (has(DType::kQ6_K) && m >= kAmxInt8Q6KMinRows)) {
      k_tiles = amxBlock256Activations(dots, x256, m, first.k / 256, &tile_bytes, &tile_floats);
    } else if (has(DType::kQ8_0) && first.m >= kAmxInt8Q8_0MinRows) {
      q8_0_tiles = amxQ8_0Activations(dots, x32, m, first.k / 32, &tile_bytes, &tile_floats);
    }
  }
  // a weight's rows [begin, end)
  const auto run = [&](const MatmulArgs& a, int64_t begin, int64_t end) {
    if (k_tiles.b != nullptr && a.w_dtype == DType::kQ4_K && a.m >= kAmxInt8Q4KMinRows) {
      amxQ4KRows(a, k_tiles, begin, end);
    } else if (k_tiles.b != nullptr && a.w_dtype == DType::kQ6_K && a.m >= kAmxInt8Q6KMinRows) {
      amxQ6KRows(a, k_tiles, begin, end);
    } else if (q8_0_tiles.b != nullptr && a.w_dtype == DType::kQ8_0) {
      amxQ8_0Rows(a, q8_0_tiles, begin, end);
    } else if (block256) {
      dotRowRange(a, dot256For(dots, a.w_dtype), dots.rows, tile256For(dots, a.w_dtype), x256, begin, end);
    } else {
      dotRowRange(a, dot32For(dots, a.w_dtype), dots.rows, tile32For(dots, a.w_dtype), x32, begin, end);
    }
  };
  if (threads == 1 || work < (1 << 16)) {
    for (const MatmulArgs& a : group) run(a, 0, a.n);
    return;
  }
  // the group's weights as one list of rows, cut into ranges: batch-1
  // decode is pure weight streaming (small equal ranges balance the
  // threads); a batch's dots are compute-bound (ranges that shrink as the
  // rows run out, so the threads take few ranges from the pool and finish
  // together on small last ones). A range that spans two weights is two
  // tasks.
  std::vector<int64_t> edges;
  if (first.m == 1) {
    const int64_t wanted = int64_t{threads} * 8;
    const int64_t chunk = std::max<int64_t>(4, (rows + wanted - 1) / wanted);
    for (int64_t e = 0; e < rows; e += chunk) edges.push_back(e);
    edges.push_back(rows);
  } else {
    edges = guidedEdges(rows, threads);
  }
  struct Piece {
    const MatmulArgs* args;
    int64_t begin, end;
  };
  std::vector<Piece> pieces;
  size_t w = 0;
  int64_t w_start = 0;  // first row of weight w in the list
  for (size_t e = 0; e + 1 < edges.size(); ++e) {
    int64_t begin = edges[e];
    while (begin < edges[e + 1]) {
      while (begin >= w_start + group[w].n) w_start += group[w++].n;
      const int64_t end = std::min(edges[e + 1], w_start + group[w].n);
      pieces.push_back({&group[w], begin - w_start, end - w_start});
      begin = end;
    }
  }
  parallel(static_cast<int>(pieces.size()), [&](int t) { run(*pieces[t].args, pieces[t].begin, pieces[t].end); });
}

}  // namespace tandem::kernels::cpu
