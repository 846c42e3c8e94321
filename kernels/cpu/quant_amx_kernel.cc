// The AMX-INT8 kernel of quant_amx.h: compiled with -mamx-tile -mamx-int8
// and the AVX-512 flags; called only after amxInt8Usable() said yes. No
// inline functions from shared headers (but q4_k_scales_x86.h, included
// inside the anonymous namespace) and no std templates here: a copy
// compiled with these flags could be the one the linker keeps for every file.
#include <cstdint>
#include <cstring>

#include "common/quant_blocks.h"
#include "kernels/cpu/amx_tile_config.h"
#include "kernels/cpu/quant_amx.h"

#if defined(__x86_64__) && defined(__AMX_TILE__) && defined(__AMX_INT8__) && defined(__AVX512F__)
#include <immintrin.h>

namespace tandem::kernels::cpu {

namespace {

constexpr int kRows = 16;  // weight rows of a tile group, and x columns

// tmm0, tmm1: A, `rows` weight rows x `block_bytes` bytes of a sub-block
// (Q4_K: 32, Q6_K: 16) or block (Q8_0: 32); tmm2, tmm3: B, block_bytes / 4
// rows of 16 x rows x 4 bytes; tmm4-7: C, `rows` weight rows x 16 x rows
// of int32, one per (sub-)block of four in flight (a tile product's
// latency is not waited for by the next one's store).
void configureTiles(int rows, int block_bytes = 32) {
  AmxTileConfig cfg;
  for (int t = 0; t < 2; ++t) {
    cfg.rows[t] = static_cast<uint8_t>(rows);
    cfg.colsb[t] = static_cast<uint16_t>(block_bytes);
    cfg.rows[2 + t] = static_cast<uint8_t>(block_bytes / 4);
    cfg.colsb[2 + t] = 64;
  }
  for (int t = 4; t < 8; ++t) {
    cfg.rows[t] = static_cast<uint8_t>(rows);
    cfg.colsb[t] = 64;
  }
  // GCC 12 does not see LDTILECFG read past the configuration's first
  // byte: with `rows` a variable it dropped the stores above (an empty
  // configuration, SIGILL at the first tile instruction). The barrier
  // makes them happen.
  __asm__ volatile("" : : "r"(&cfg) : "memory");
  _tile_loadconfig(&cfg);
}

// four (sub-)blocks q = 0..3 by PRODUCT(q, A tile, B tile, C tile), the A
// and B tiles taken in turn, then the four C tiles stored to c[0..3].
#define TANDEM_AMX_FOUR(PRODUCT) \
  PRODUCT(0, 0, 2, 4);           \
  PRODUCT(1, 1, 3, 5);           \
  PRODUCT(2, 0, 2, 6);           \
  PRODUCT(3, 1, 3, 7);           \
  _tile_stored(4, c[0], 64);     \
  _tile_stored(5, c[1], 64);     \
  _tile_stored(6, c[2], 64);     \
  _tile_stored(7, c[3], 64)

#include "kernels/cpu/q4_k_scales_x86.h"

float halfToFloat(uint16_t h) { return _cvtsh_ss(h); }

// the next group's rows (one contiguous run of bytes, [next, end)) into L2 at
// the pace of this group: `step` bytes (whole lines) a call, call `i` of the
// group. 16 rows are 16 streams, more than the hardware prefetchers follow:
// without this Q4_K 16-sequence decode ran 15-20% slower (model_runner_bench
// --tests batch, bench/RESULTS.md "rows of y stored whole; AMX-INT8 for Q6_K").
void prefetchAhead(const char* next, const char* end, int64_t step, int64_t i) {
  const char* from = next + i * step;
  for (int64_t o = 0; o < step && from + o < end; o += 64) _mm_prefetch(from + o, _MM_HINT_T1);
}

// the bytes of one block of each of a group's 16 rows, in whole lines
constexpr int64_t groupStep(int64_t block_bytes) { return (kRows * block_bytes + 63) / 64 * 64; }

// y[r][c0 + cc] = t[cc] lane r (+ bias[c0 + cc]) for r < m, cc < rows: t
// transposed in registers and stored a row of y at a time. (A scalar store per
// value put a group's 16 rows of y, n floats apart, into one L1 set when n is a
// multiple of 1024: Q4_K 16-row batches ran 30% slower on 2048-row weights than
// on 512-row ones: quant_dot_bench --k 2048 --weights 2048 --rows 16,
// bench/RESULTS.md "rows of y stored whole; AMX-INT8 for Q6_K".)
void storeTransposed(__m512 t[kRows], int rows, const MatmulArgs& a, int m, int64_t c0) {
  __m512 u[kRows], v[kRows];
  for (int i = 0; i < kRows; i += 2) {
    u[i] = _mm512_unpacklo_ps(t[i], t[i + 1]);
    u[i + 1] = _mm512_unpackhi_ps(t[i], t[i + 1]);
  }
  // u[i] lane 4 b + 2 l + e: t[i + e] lane 4 b + l; u[i + 1] the same
  // with lane 4 b + 2 + l (l, e in 0..1)
  for (int i = 0; i < kRows; i += 4) {
    for (int h = 0; h < 2; ++h) {
      v[i + 2 * h] = _mm512_shuffle_ps(u[i + h], u[i + 2 + h], 0x44);
      v[i + 2 * h + 1] = _mm512_shuffle_ps(u[i + h], u[i + 2 + h], 0xEE);
    }
  }
  // v[4 g + s] lane 4 b + l: t[4 g + l] lane 4 b + s (4x4 blocks
  // transposed); then the blocks
  for (int i = 0; i < kRows; i += 8) {
    for (int h = 0; h < 4; ++h) {
      u[i + h] = _mm512_shuffle_f32x4(v[i + h], v[i + 4 + h], 0x88);
      u[i + 4 + h] = _mm512_shuffle_f32x4(v[i + h], v[i + 4 + h], 0xDD);
    }
  }
  for (int h = 0; h < 8; ++h) {
    v[h] = _mm512_shuffle_f32x4(u[h], u[h + 8], 0x88);
    v[h + 8] = _mm512_shuffle_f32x4(u[h], u[h + 8], 0xDD);
  }
  // v[r] lane cc: t[cc] lane r
  const __mmask16 live = static_cast<__mmask16>((1u << rows) - 1);
  const __m512 bias = a.bias != nullptr ? _mm512_maskz_loadu_ps(live, a.bias + c0) : _mm512_setzero_ps();
  for (int r = 0; r < m; ++r) _mm512_mask_storeu_ps(a.y + r * a.n + c0, live, _mm512_add_ps(v[r], bias));
}

// acc[cc] += t[cc] dx: a 256-value block's sums t (lane r: row r of x) by
// its scales dx[r] in x.
void addBlock(float (*acc)[kRows], const __m512 t[kRows], const float* dx) {
  const __m512 d = _mm512_loadu_ps(dx);
  for (int cc = 0; cc < kRows; ++cc) _mm512_store_ps(acc[cc], _mm512_fmadd_ps(t[cc], d, _mm512_load_ps(acc[cc])));
}

// storeTransposed of the sums in acc.
void storeAcc(const float (*acc)[kRows], int rows, const MatmulArgs& a, int m, int64_t c0) {
  __m512 sums[kRows];
  for (int cc = 0; cc < kRows; ++cc) sums[cc] = _mm512_load_ps(acc[cc]);
  storeTransposed(sums, rows, a, m, c0);
}

}  // namespace

namespace {

// sub-block j0 + q of `bytes`-byte sub-blocks (the A tile's rows 256 bytes
// apart in u.w8, x's B tile from x.b) into C tile tc by the tile product
// DP (tile numbers are literals in the intrinsics: q's four calls spell
// them out).
#define TANDEM_AMX_SUBBLOCK(DP, bytes, q, ta, tb, tc)                   \
  _tile_zero(tc);                                                       \
  _tile_loadd(ta, &u.w8[0][(bytes) * (j0 + (q))], 256);                 \
  _tile_loadd(tb, x.b + i * 4096 + (j0 + (q)) * (bytes) * 16, 64);      \
  DP(tc, ta, tb)

// Q4_K: 8 sub-blocks of 32 values, nibbles unpacked to bytes (unsigned, by
// signed x); a sub-block's sum d sc_j (q . x) - dmin m_j sum(x).
struct Q4KFormat {
  using Block = quant::BlockQ4_K;
  static constexpr int kSubBlocks = 8, kSubBlockBytes = 32;
  struct Unpacked {
    alignas(64) uint8_t w8[kRows][256];
    float dsc[kRows][8], dmn[kRows][8];
  };
  // block i of the group's `rows` rows (from `group`, rows `blocks` apart)
  static void unpack(const Block* group, int64_t blocks, int rows, int64_t i, Unpacked& u) {
    const __m256i low4 = _mm256_set1_epi8(0xF);
    for (int cc = 0; cc < kRows; ++cc) {
      if (cc >= rows) {
        std::memset(u.w8[cc], 0, sizeof u.w8[cc]);
        for (int j = 0; j < 8; ++j) u.dsc[cc][j] = u.dmn[cc][j] = 0.0f;
        continue;
      }
      const Block& b = group[cc * blocks + i];
      for (int t = 0; t < 4; ++t) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * t));
        _mm256_store_si256(reinterpret_cast<__m256i*>(u.w8[cc] + 64 * t), _mm256_and_si256(v, low4));
        _mm256_store_si256(reinterpret_cast<__m256i*>(u.w8[cc] + 64 * t + 32),
                           _mm256_and_si256(_mm256_srli_epi16(v, 4), low4));
      }
      const __m128i sm = scalesMinsK4(b);
      _mm256_storeu_ps(u.dsc[cc], _mm256_mul_ps(_mm256_set1_ps(halfToFloat(b.d)),
                                                _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sm))));
      _mm256_storeu_ps(u.dmn[cc], _mm256_mul_ps(_mm256_set1_ps(halfToFloat(b.dmin)),
                                                _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(sm, 8)))));
    }
  }
  static void products(const Unpacked& u, const AmxBlock256Activations& x, int64_t i, int j0,
                       int32_t (*c)[kRows][kRows]) {
#define TANDEM_AMX_Q4_K(q, ta, tb, tc) TANDEM_AMX_SUBBLOCK(_tile_dpbusd, 32, q, ta, tb, tc)
    TANDEM_AMX_FOUR(TANDEM_AMX_Q4_K);
#undef TANDEM_AMX_Q4_K
  }
  // t[cc] lane r += sub-block j's sum, from its C tile cq
  static void scale(const Unpacked& u, const AmxBlock256Activations& x, int64_t i, int j,
                    const int32_t (*cq)[kRows], __m512 t[kRows]) {
    const __m512 xs = _mm512_loadu_ps(x.xs + (i * 8 + j) * kRows);
    for (int cc = 0; cc < kRows; ++cc) {
      t[cc] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(cq[cc])), _mm512_set1_ps(u.dsc[cc][j]), t[cc]);
      t[cc] = _mm512_fnmadd_ps(_mm512_set1_ps(u.dmn[cc][j]), xs, t[cc]);
    }
  }
};

// Q6_K: 16 sub-blocks of 16 values, each value less 32 as a signed byte
// (by signed x); a sub-block's sum d sc_j ((q - 32) . x).
struct Q6KFormat {
  using Block = quant::BlockQ6_K;
  static constexpr int kSubBlocks = 16, kSubBlockBytes = 16;
  struct Unpacked {
    alignas(64) int8_t w8[kRows][256];
    alignas(64) float dsc[kRows][16];
  };
  static void unpack(const Block* group, int64_t blocks, int rows, int64_t i, Unpacked& u) {
    const __m512i low4 = _mm512_set1_epi8(0x0F), high2 = _mm512_set1_epi8(0x30), offset = _mm512_set1_epi8(32);
    // a half's 32 qh bytes in both 256-bit halves of a register: bits 0-1
    // (values 0-31) and 2-3 (32-63) to bits 4-5 by one shift, 4-5 (64-95)
    // and 6-7 (96-127) by another
    const __m512i shift01 = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
    const __m512i shift23 = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    for (int cc = 0; cc < kRows; ++cc) {
      if (cc >= rows) {
        for (int h = 0; h < 4; ++h) _mm512_store_si512(u.w8[cc] + 64 * h, _mm512_setzero_si512());
        _mm512_store_ps(u.dsc[cc], _mm512_setzero_ps());
        continue;
      }
      const Block& b = group[cc * blocks + i];
      for (int n = 0; n < 2; ++n) {
        const __m512i l = _mm512_loadu_si512(b.ql + 64 * n);
        const __m512i h = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * n)));
        const __m512i q01 = _mm512_or_si512(_mm512_and_si512(l, low4),
                                            _mm512_and_si512(_mm512_sllv_epi16(h, shift01), high2));
        const __m512i q23 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l, 4), low4),
                                            _mm512_and_si512(_mm512_srlv_epi16(h, shift23), high2));
        _mm512_store_si512(u.w8[cc] + 128 * n, _mm512_sub_epi8(q01, offset));
        _mm512_store_si512(u.w8[cc] + 128 * n + 64, _mm512_sub_epi8(q23, offset));
      }
      const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales));
      const __m512 sc = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(sc8));
      _mm512_store_ps(u.dsc[cc], _mm512_mul_ps(_mm512_set1_ps(halfToFloat(b.d)), sc));
    }
  }
  static void products(const Unpacked& u, const AmxBlock256Activations& x, int64_t i, int j0,
                       int32_t (*c)[kRows][kRows]) {
#define TANDEM_AMX_Q6_K(q, ta, tb, tc) TANDEM_AMX_SUBBLOCK(_tile_dpbssd, 16, q, ta, tb, tc)
    TANDEM_AMX_FOUR(TANDEM_AMX_Q6_K);
#undef TANDEM_AMX_Q6_K
  }
  static void scale(const Unpacked& u, const AmxBlock256Activations&, int64_t, int j, const int32_t (*cq)[kRows],
                    __m512 t[kRows]) {
    for (int cc = 0; cc < kRows; ++cc) {
      t[cc] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(cq[cc])), _mm512_set1_ps(u.dsc[cc][j]), t[cc]);
    }
  }
};

#undef TANDEM_AMX_SUBBLOCK

// the Q4_K and Q6_K kernels: 16 weight rows at a time; block i + 1 of
// their rows unpacked (into buffer (i + 1) % 2) while block i's
// sub-blocks go through the tiles four at a time (a tile load of bytes
// stored just before waits for the stores to reach L1, no forwarding:
// that stalled the Q4_K kernel ~11% of its time), each block's sums
// scaled by x's block scales.
template <typename Format>
void amxBlock256Rows(const MatmulArgs& a, const AmxBlock256Activations& x, int64_t n_begin, int64_t n_end) {
  const auto* w = static_cast<const typename Format::Block*>(a.w);
  const int64_t blocks = x.blocks;
  typename Format::Unpacked unpacked[2];
  alignas(64) int32_t c[4][kRows][kRows];
  alignas(64) float acc[kRows][kRows];
  configureTiles(kRows, Format::kSubBlockBytes);
  for (int64_t c0 = n_begin; c0 < n_end; c0 += kRows) {
    const int rows = static_cast<int>(n_end - c0 < kRows ? n_end - c0 : kRows);
    for (int cc = 0; cc < kRows; ++cc) _mm512_store_ps(acc[cc], _mm512_setzero_ps());
    const char* next = reinterpret_cast<const char*>(w + (c0 + kRows) * blocks);
    const char* next_end = reinterpret_cast<const char*>(w + n_end * blocks);
    Format::unpack(w + c0 * blocks, blocks, rows, 0, unpacked[0]);
    for (int64_t i = 0; i < blocks; ++i) {
      prefetchAhead(next, next_end, groupStep(sizeof(typename Format::Block)), i);
      if (i + 1 < blocks) Format::unpack(w + c0 * blocks, blocks, rows, i + 1, unpacked[(i + 1) % 2]);
      const typename Format::Unpacked& u = unpacked[i % 2];
      // t[cc] lane r: the block's sum for weight row c0 + cc, row r of x
      __m512 t[kRows];
      for (__m512& v : t) v = _mm512_setzero_ps();
      for (int j0 = 0; j0 < Format::kSubBlocks; j0 += 4) {
        Format::products(u, x, i, j0, c);
        for (int q = 0; q < 4; ++q) Format::scale(u, x, i, j0 + q, c[q], t);
      }
      addBlock(acc, t, x.dx + i * kRows);
    }
    storeAcc(acc, rows, a, x.m, c0);
  }
  _tile_release();
}

}  // namespace

void amxQ4KRows(const MatmulArgs& a, const AmxBlock256Activations& x, int64_t n_begin, int64_t n_end) {
  amxBlock256Rows<Q4KFormat>(a, x, n_begin, n_end);
}

void amxQ6KRows(const MatmulArgs& a, const AmxBlock256Activations& x, int64_t n_begin, int64_t n_end) {
  amxBlock256Rows<Q6KFormat>(a, x, n_begin, n_end);
}

// block i + q of the group's rows (read in place: a Q8_0 block's 32 bytes
// are the tile row, rows a weight row's bytes apart) into C tile tc.
#define TANDEM_AMX_Q8_0_BLOCK(q, ta, tb, tc)             \
  _tile_zero(tc);                                        \
  _tile_loadd(ta, w[c0 * blocks + i + (q)].qs, stride);  \
  _tile_loadd(tb, x.b + (i + (q)) * 512, 64);            \
  _tile_dpbssd(tc, ta, tb)

void amxQ8_0Rows(const MatmulArgs& a, const AmxQ8_0Activations& x, int64_t n_begin, int64_t n_end) {
  const auto* w = static_cast<const quant::BlockQ8_0*>(a.w);
  const int64_t blocks = x.blocks;
  const int64_t stride = blocks * static_cast<int64_t>(sizeof(quant::BlockQ8_0));
  alignas(64) int32_t c[4][kRows][kRows];
  // (the C tiles of a last group store fewer rows: the others stay finite)
  std::memset(c, 0, sizeof c);
  // each row's block scale, 16 rows at once: a gather of the rows' d (the
  // 4 bytes at each block's start), the rows a weight row's bytes apart
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i row_offsets = _mm512_mullo_epi32(lanes, _mm512_set1_epi32(static_cast<int>(stride)));
  int configured = 0;
  for (int64_t c0 = n_begin; c0 < n_end; c0 += kRows) {
    // a last group of fewer rows: tiles of that many rows (no reads past
    // the weight's end)
    const int rows = static_cast<int>(n_end - c0 < kRows ? n_end - c0 : kRows);
    if (rows != configured) {
      configureTiles(rows);
      configured = rows;
    }
    const char* next = reinterpret_cast<const char*>(w + (c0 + kRows) * blocks);
    const char* next_end = reinterpret_cast<const char*>(w + n_end * blocks);
    // rows past `rows` masked out of the scales' gather (their scale 0)
    const __mmask16 live = static_cast<__mmask16>((1u << rows) - 1);
    // t[cc] lane r: sum over blocks of d_w d_x (q . x)
    __m512 t[kRows];
    for (__m512& v : t) v = _mm512_setzero_ps();
    const auto scale = [&](const int32_t (*cq)[kRows], int64_t block) {
      const __m512 dx = _mm512_loadu_ps(x.dx + block * kRows);
      const __m512i d32 = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), live, row_offsets,
                                                       w + c0 * blocks + block, 1);
      alignas(64) float dw[kRows];
      _mm512_store_ps(dw, _mm512_cvtph_ps(_mm512_cvtepi32_epi16(d32)));
#pragma GCC unroll 16
      for (int cc = 0; cc < kRows; ++cc) {
        const __m512 d = _mm512_mul_ps(dx, _mm512_set1_ps(dw[cc]));
        t[cc] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(cq[cc])), d, t[cc]);
      }
    };
    int64_t i = 0;
    for (; i + 4 <= blocks; i += 4) {
      prefetchAhead(next, next_end, groupStep(4 * sizeof(quant::BlockQ8_0)), i / 4);
      TANDEM_AMX_FOUR(TANDEM_AMX_Q8_0_BLOCK);
      for (int q = 0; q < 4; ++q) scale(c[q], i + q);
    }
    for (; i < blocks; ++i) {
      TANDEM_AMX_Q8_0_BLOCK(0, 0, 2, 4);
      _tile_stored(4, c[0], 64);
      scale(c[0], i);
    }
    storeTransposed(t, rows, a, x.m, c0);
  }
  _tile_release();
}

#undef TANDEM_AMX_Q8_0_BLOCK
#undef TANDEM_AMX_FOUR

bool amxInt8KernelBuilt() { return true; }

}  // namespace tandem::kernels::cpu

#else  // a compiler or target without AMX-INT8: amxInt8Usable() says no

namespace tandem::kernels::cpu {
void amxQ4KRows(const MatmulArgs&, const AmxBlock256Activations&, int64_t, int64_t) {}
void amxQ6KRows(const MatmulArgs&, const AmxBlock256Activations&, int64_t, int64_t) {}
void amxQ8_0Rows(const MatmulArgs&, const AmxQ8_0Activations&, int64_t, int64_t) {}
bool amxInt8KernelBuilt() { return false; }
}  // namespace tandem::kernels::cpu

#endif
