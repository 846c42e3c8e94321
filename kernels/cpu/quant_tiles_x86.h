// The x86 dot tables' tiles (QuantDotTable::tileQ8_0, tileQ4_0, tileQ4_K):
// several weight rows share each activation load. Part of quant_dot_x86.h
// and included by it only, inside each table's anonymous namespace, after
// its dpbusd, its flags (kTile32, kTile256, kUnsignedAct32), the block
// loaders and the reductions it defines, and q4_k_scales_x86.h.
#pragma once

// a block's signed weight bytes, by its type (the tiles').
[[maybe_unused]] __m256i signedBytes(const BlockQ8_0& b) { return q8_0Bytes(b); }
[[maybe_unused]] __m256i signedBytes(const BlockQ4_0& b) { return q4_0Bytes(b); }

// Tiles (QuantDotTable::tileQ8_0, tileQ4_0; kTile32: with kGroupedAct32
// and kUnsignedAct32): a chunk of each weight row's runs is unpacked and
// transposed once into Run scratch (its values as dotSigned32 transposes
// them, the d's as floats, the -128 * weight sums), then every register
// tile of XN activation rows x WN weight rows loads each activation step
// once for WN weight rows (dotSigned32 loads it once a weight row: the
// load ports, not VPDPBUSD, bounded it). The lanes' integer sums and the
// float steps are dotSigned32's, so the numbers are.
struct alignas(32) Run32 {
  __m256i v[8];
  __m256 dw;
  __m256i start;
};

// runs a chunk of weight rows is unpacked by (in L1 with the activations'
// steps: 4 rows x 8 runs x 320 bytes).
constexpr int64_t kTileChunkRuns = 8;

template <typename Block>
void packRun32(const Block* b, Run32* out) {
  // transposed in place: from a local array GCC 12 stored the result's halves
  // through general registers (twice the instructions; +5% in a 16-sequence
  // q8_0 decode, model_runner_bench --tests tg,batch --simd avx2,
  // bench/RESULTS.md "the int8 roof measured")
  for (int j = 0; j < 8; ++j) out->v[j] = signedBytes(b[j]);
  transpose8x32(out->v);
  __m256i corr = _mm256_setzero_si256(), corr2 = _mm256_setzero_si256();
  for (int t = 0; t < 8; t += 2) {
    corr = dpbusd(corr, _mm256_set1_epi8(char(0x80)), out->v[t]);
    corr2 = dpbusd(corr2, _mm256_set1_epi8(char(0x80)), out->v[t + 1]);
  }
  out->start = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_add_epi32(corr, corr2));
  out->dw = _mm256_cvtph_ps(_mm_setr_epi16(
      static_cast<short>(b[0].d), static_cast<short>(b[1].d), static_cast<short>(b[2].d),
      static_cast<short>(b[3].d), static_cast<short>(b[4].d), static_cast<short>(b[5].d),
      static_cast<short>(b[6].d), static_cast<short>(b[7].d)));
}

// activation rows [r0, r0 + XN) x WN weight rows over `runs` packed runs
// (pack[w * kTileChunkRuns + g]) from activation block i0; the float sums
// start from facc, or from zero for the first chunk (i0 == 0).
template <int WN, int XN>
inline __attribute__((always_inline)) void tileRuns32(const Run32* pack, int64_t runs, const ActBlock32* x,
                                                      int64_t x_stride, int r0, int64_t i0, __m256* facc,
                                                      int64_t f_stride) {
  // the float sums in registers for the chunk's runs
  __m256 fa[WN][XN];
  for (int w = 0; w < WN; ++w) {
    for (int c = 0; c < XN; ++c) fa[w][c] = i0 == 0 ? _mm256_setzero_ps() : facc[w * f_stride + r0 + c];
  }
  for (int64_t g = 0; g < runs; ++g) {
    const char* xr[XN];
    for (int c = 0; c < XN; ++c) xr[c] = reinterpret_cast<const char*>(x + (r0 + c) * x_stride + i0 + 8 * g);
    __m256i s[WN][XN];
    for (int w = 0; w < WN; ++w) {
      for (int c = 0; c < XN; ++c) s[w][c] = _mm256_setzero_si256();
    }
    for (int t = 0; t < 8; ++t) {
      __m256i xv[XN];
      for (int c = 0; c < XN; ++c) xv[c] = load32(xr[c] + 32 + 32 * t);
      for (int w = 0; w < WN; ++w) {
        const __m256i wv = pack[w * kTileChunkRuns + g].v[t];
        for (int c = 0; c < XN; ++c) s[w][c] = dpbusd(s[w][c], xv[c], wv);
      }
    }
    for (int c = 0; c < XN; ++c) {
      const __m256 dx = _mm256_loadu_ps(reinterpret_cast<const float*>(xr[c]));
      for (int w = 0; w < WN; ++w) {
        const Run32& p = pack[w * kTileChunkRuns + g];
        fa[w][c] = _mm256_fmadd_ps(_mm256_mul_ps(p.dw, dx), _mm256_cvtepi32_ps(_mm256_add_epi32(s[w][c], p.start)),
                                   fa[w][c]);
      }
    }
  }
  for (int w = 0; w < WN; ++w) {
    for (int c = 0; c < XN; ++c) facc[w * f_stride + r0 + c] = fa[w][c];
  }
}

// the float sums of a tile call of more than kTileRows rows (per thread).
struct alignas(32) TileSum {
  __m256 v;
};
__m256* tileSums(size_t n) {
  static_assert(sizeof(TileSum) == sizeof(__m256));
  thread_local std::vector<TileSum> sums;
  if (sums.size() < n) sums.resize(n);
  return &sums[0].v;
}

// the register tiles a tile call runs over `rows` activation rows: XN at a
// time, kTileRows at a time.
constexpr int tileCalls(int rows, int xn) {
  return rows / kTileRows * ((kTileRows + xn - 1) / xn) + (rows % kTileRows + xn - 1) / xn;
}

// the bytes [offset + kWeightPrefetchBytes, + size) of `weights` rows asked
// for into L2 in `slices` equal slices, one a next() call.
struct AheadSlices {
  const void* const* w;
  int weights;
  int64_t offset, size;
  int slices;
  int slice = 0;

  void next() {
    if (slice == slices) return;
    const int64_t lo = size * slice / slices & ~int64_t{63}, hi = size * (slice + 1) / slices;
    for (int v = 0; v < weights; ++v) {
      const char* ahead = static_cast<const char*>(w[v]) + offset + kWeightPrefetchBytes;
      for (int64_t o = lo; o < hi; o += 64) _mm_prefetch(ahead + o, _MM_HINT_T1);
    }
    ++slice;
  }
};

// a register tile of the last n < XN activation rows of a group.
template <typename K, int WN, int XN>
inline __attribute__((always_inline)) void tileTail(int n, const typename K::Run* pack, int64_t runs,
                                                    const typename K::Act* x, int64_t x_stride, int r0,
                                                    int64_t run0, __m256* facc, int64_t f_stride) {
  if constexpr (XN > 1) {
    if (n == XN - 1) {
      K::template tile<WN, XN - 1>(pack, runs, x, x_stride, r0, run0, facc, f_stride);
    } else {
      tileTail<K, WN, XN - 1>(n, pack, runs, x, x_stride, r0, run0, facc, f_stride);
    }
  }
}

// The tiles' loop, for a kind K of weights (Signed32Tile, Q4_KTile): a
// chunk of each weight row's runs (256 values each) is unpacked once into
// K::Run scratch (K::pack), then every register tile of K::kXN activation
// rows x WN weight rows (K::tile) loads each activation step once for WN
// weight rows.
template <int WN, typename K>
void tileWeightRows(const void* const* w, const typename K::Act* x, int64_t x_stride, int rows, int64_t n,
                    float* out, int64_t out_stride) {
  constexpr int XN = K::kXN;
  typename K::Run pack[WN * kTileChunkRuns];
  // weight row v's float sums for row r at facc[v * f_stride + r]: on the
  // stack for a batch (up to kTileRows rows), in thread scratch for prefill
  __m256 small[WN * kTileRows];
  const int64_t f_stride = rows <= kTileRows ? kTileRows : rows;
  __m256* facc = rows <= kTileRows ? small : tileSums(static_cast<size_t>(WN * f_stride));
  const int64_t runs = n / 256;
  for (int64_t g0 = 0; g0 < runs; g0 += kTileChunkRuns) {
    const int64_t chunk = runs - g0 < kTileChunkRuns ? runs - g0 : kTileChunkRuns;
    for (int v = 0; v < WN; ++v) {
      for (int64_t g = 0; g < chunk; ++g) K::pack(w[v], g0 + g, &pack[v * kTileChunkRuns + g]);
    }
    // the weights kWeightPrefetchBytes ahead of the chunk's, a slice before
    // each tile, so the reads overlap the tiles' arithmetic (asked for all at
    // once in the packing, they stalled it: quant_dot_bench --simd avx2 --k 768
    // --rows 16, bench/RESULTS.md "the int8 roof measured")
    AheadSlices ahead{w, WN, g0 * K::kRunBytes, chunk * K::kRunBytes, tileCalls(rows, XN)};
    // the chunk's packed weights meet every row of x, kTileRows at a time
    for (int q0 = 0; q0 < rows; q0 += kTileRows) {
      const int q_rows = rows - q0 < kTileRows ? rows - q0 : kTileRows;
      const typename K::Act* xq = x + q0 * x_stride;
      int r0 = 0;
      for (; r0 + XN <= q_rows; r0 += XN) {
        ahead.next();
        K::template tile<WN, XN>(pack, chunk, xq, x_stride, r0, g0, facc + q0, f_stride);
      }
      if (r0 < q_rows) {
        ahead.next();
        tileTail<K, WN, XN>(q_rows - r0, pack, chunk, xq, x_stride, r0, g0, facc + q0, f_stride);
      }
    }
  }
  for (int v = 0; v < WN; ++v) {
    int r = 0;
    for (; r + 8 <= rows; r += 8) hsumRows<8>(facc + v * f_stride + r, out + v * out_stride + r);
    for (; r < rows; ++r) out[v * out_stride + r] = hsum(facc[v * f_stride + r]);
  }
}

// the table's tile of kind K: 1 to kTileWeights weight rows.
template <typename K>
void tileOf(const void* const* w, int weights, const typename K::Act* x, int64_t x_stride, int rows, int64_t n,
            float* out, int64_t out_stride) {
  switch (weights) {
    case 4: tileWeightRows<4, K>(w, x, x_stride, rows, n, out, out_stride); break;
    case 3: tileWeightRows<3, K>(w, x, x_stride, rows, n, out, out_stride); break;
    case 2: tileWeightRows<2, K>(w, x, x_stride, rows, n, out, out_stride); break;
    default: tileWeightRows<1, K>(w, x, x_stride, rows, n, out, out_stride); break;
  }
}

// q8_0 / q4_0 tiles: a run is 8 blocks of 32.
template <typename Block>
struct Signed32Tile {
  using Act = ActBlock32;
  using Run = Run32;
  static constexpr int kXN = 2;
  static constexpr int64_t kRunBytes = 8 * static_cast<int64_t>(sizeof(Block));
  static void pack(const void* row, int64_t run, Run32* out) {
    packRun32<Block>(static_cast<const Block*>(row) + 8 * run, out);
  }
  template <int WN, int XN>
  static void tile(const Run32* pack, int64_t runs, const ActBlock32* x, int64_t x_stride, int r0, int64_t run0,
                   __m256* facc, int64_t f_stride) {
    tileRuns32<WN, XN>(pack, runs, x, x_stride, r0, 8 * run0, facc, f_stride);
  }
};

// the table's tile where kTile32 (not instantiated elsewhere).
template <typename Block>
constexpr DotTileFn<ActBlock32> tileOrNull() {
  if constexpr (kTile32) {
    return tileOf<Signed32Tile<Block>>;
  } else {
    return nullptr;
  }
}

// Q4_K tiles (QuantDotTable::tileQ4_K; kTile256): a block's values unpacked
// and transposed as dotQ4_KGrouped unpacks them, with its d * scale and
// dmin * min lanes, once per weight row and chunk, then register tiles of
// kXN activation rows x WN weight rows, each activation step loaded once for
// WN weight rows (the dot loads it once per weight row). The lanes' integer
// sums and the float steps are dotQ4_KGrouped's, so the numbers are.
struct alignas(32) RunQ4_K {
  __m256i u[8];
  __m256 dsc, dm;
};

void packQ4_K(const BlockQ4_K& b, RunQ4_K* out) {
  const __m256i low4 = _mm256_set1_epi8(0xF);
  for (int j = 0; j < 4; ++j) {
    const __m256i v = load32(b.qs + 32 * j);
    out->u[2 * j] = _mm256_and_si256(v, low4);
    out->u[2 * j + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
  }
  transpose8x32(out->u);
  const __m128i sm = scalesMinsK4(b);
  out->dsc = _mm256_mul_ps(_mm256_set1_ps(halfToFloat(b.d)), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sm)));
  out->dm = _mm256_mul_ps(_mm256_set1_ps(halfToFloat(b.dmin)),
                          _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(sm, 8))));
}

struct Q4_KTile {
  using Act = ActBlock256;
  using Run = RunQ4_K;
  // 2 rows: WN x 2 sums, 2 activation steps and a weight step in AVX2's 16
  // registers
  static constexpr int kXN = 2;
  static constexpr int64_t kRunBytes = sizeof(BlockQ4_K);
  static void pack(const void* row, int64_t run, RunQ4_K* out) {
    packQ4_K(static_cast<const BlockQ4_K*>(row)[run], out);
  }

  // activation rows [r0, r0 + XN) x WN weight rows over `runs` packed
  // blocks (pack[w * kTileChunkRuns + g]) from activation block run0; the
  // float sums start from facc, or from zero for the first chunk.
  template <int WN, int XN>
  static inline __attribute__((always_inline)) void tile(const RunQ4_K* pack, int64_t runs, const ActBlock256* x,
                                                         int64_t x_stride, int r0, int64_t run0, __m256* facc,
                                                         int64_t f_stride) {
    const __m256i ones = _mm256_set1_epi16(1);
    // the float sums stay in facc (in registers with the WN x XN integer
    // sums, AVX2's 16 would spill the integer ones)
    for (int64_t g = 0; g < runs; ++g) {
      const ActBlock256* xb[XN];
      for (int c = 0; c < XN; ++c) xb[c] = x + (r0 + c) * x_stride + run0 + g;
      // VPDPBUSD: int32 lanes; maddubs: int16 pairs of all 8 steps, as the dot
      __m256i s[WN][XN];
      for (int w = 0; w < WN; ++w) {
        for (int c = 0; c < XN; ++c) s[w][c] = _mm256_setzero_si256();
      }
      for (int t = 0; t < 8; ++t) {
        __m256i xv[XN];
        for (int c = 0; c < XN; ++c) xv[c] = load32(xb[c]->qs + 32 * t);
        for (int w = 0; w < WN; ++w) {
          const __m256i wv = pack[w * kTileChunkRuns + g].u[t];
          for (int c = 0; c < XN; ++c) {
            if constexpr (kUnsignedAct32) {
              s[w][c] = dpbusd(s[w][c], wv, xv[c]);
            } else {
              s[w][c] = _mm256_add_epi16(s[w][c], _mm256_maddubs_epi16(wv, xv[c]));
            }
          }
        }
      }
      for (int c = 0; c < XN; ++c) {
        const __m256 sumx = _mm256_loadu_ps(xb[c]->sub_sums);
        const __m256 dx = _mm256_broadcast_ss(&xb[c]->d);
        for (int w = 0; w < WN; ++w) {
          const RunQ4_K& p = pack[w * kTileChunkRuns + g];
          const __m256i sumq = kUnsignedAct32 ? s[w][c] : _mm256_madd_epi16(s[w][c], ones);
          const __m256 t = _mm256_fmsub_ps(_mm256_cvtepi32_ps(sumq), p.dsc, _mm256_mul_ps(sumx, p.dm));
          __m256& f = facc[w * f_stride + r0 + c];
          f = _mm256_fmadd_ps(dx, t, run0 + g == 0 ? _mm256_setzero_ps() : f);
        }
      }
    }
  }
};

// the table's Q4_K tile where kTile256 (not instantiated elsewhere).
constexpr DotTileFn<ActBlock256> tileQ4_KOrNull() {
  if constexpr (kTile256) {
    return tileOf<Q4_KTile>;
  } else {
    return nullptr;
  }
}
