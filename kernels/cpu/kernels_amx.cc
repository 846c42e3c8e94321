// The AMX-BF16 tile kernel of amx_matmul.h. The only file compiled with
// -mamx-tile -mamx-bf16 (and the AVX-512 BF16 conversions it packs with;
// kernels/CMakeLists.txt); called only after amxBf16Usable() said yes
// (amx_matmul.cc), so no other code path runs these instructions. No std
// templates here: an inline instantiation compiled with these flags could
// be the one the linker keeps for every file.
//
// Each operand is a sum of BF16 parts, each bf16 of what the ones before
// it miss: x in three (24 significant bits, F32's); w in three where it is
// F32 (exactly), two where it is F16 (its 11 bits exactly) or dequantized
// from blocks (16 of at most 19 bits), one where it is BF16. y sums every
// product of parts at least 2^-16 of x w (x0 w0, x1 w0, x2 w0, x0 w1,
// x1 w1, x0 w2) with F32 accumulation: the F32 kernels' tolerance, where
// one BF16 product would round x to 8 bits.
//
// Tiles: a 32 x 32 block of y is four F32 accumulators (tmm0-3), fed by two
// A tiles of x rows (tmm4-5, 16 rows x 32 k, straight from the split x) and
// two B tiles of w rows (tmm6-7, 32 k x 16 w rows in the VNNI pair layout:
// tile row p holds the (k 2p, 2p + 1) pairs of the 16 w rows).
#include <cstdint>
#include <cstring>

#include "common/dtype.h"
#include "kernels/cpu/amx_matmul.h"
#include "kernels/cpu/amx_tile_config.h"

#if defined(__x86_64__) && defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(__AVX512BF16__)
#include <immintrin.h>

namespace tandem::kernels::cpu {

namespace {

constexpr int kTileRows = 16;   // rows of every tile
constexpr int kPanel = 32;      // w rows per packed panel (two B tiles)
constexpr int kTileU16 = 512;   // bf16 values in a 1 KB tile
constexpr int kAmxWParts = 3;   // the most BF16 parts of a w value (F32's 24 bits)

void configureTiles() {
  AmxTileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = kTileRows;
  }
  // the configuration's stores kept before LDTILECFG (GCC 12 can drop
  // them: quant_amx_kernel.cc, configureTiles)
  __asm__ volatile("" : : "r"(&cfg) : "memory");
  _tile_loadconfig(&cfg);
}

int64_t minOf(int64_t a, int64_t b) { return a < b ? a : b; }

// thread scratch `slot` of at least `floats` floats from a 64-byte
// boundary: a tile row that straddles two cache lines loads both.
float* alignedScratch(int slot, size_t floats) {
  const auto p = reinterpret_cast<uintptr_t>(threadScratch(slot, floats + 16));
  return reinterpret_cast<float*>((p + 63) & ~uintptr_t{63});
}

// v as two F32 vectors (values 0..15, 16..31) of `valid` values from p.
struct Floats32 {
  __m512 lo16, hi16;
};

// the first `valid` of 32 lanes
__mmask32 firstLanes(int valid) { return valid >= 32 ? ~__mmask32{0} : (__mmask32{1} << valid) - 1; }

Floats32 loadFloats(const void* p, DType t, int valid) {
  const __mmask32 m32 = firstLanes(valid);
  if (t == DType::kF32) {
    const auto* f = static_cast<const float*>(p);
    return {_mm512_maskz_loadu_ps(static_cast<__mmask16>(m32), f),
            _mm512_maskz_loadu_ps(static_cast<__mmask16>(m32 >> 16), f + 16)};
  }
  const __m512i v = _mm512_maskz_loadu_epi16(m32, p);
  if (t == DType::kF16) {
    return {_mm512_cvtph_ps(_mm512_castsi512_si256(v)), _mm512_cvtph_ps(_mm512_extracti64x4_epi64(v, 1))};
  }
  // BF16: the value's bits are the top half of its F32
  return {_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(v)), 16)),
          _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(v, 1)), 16))};
}

__m512i toBf16(__m512 lo16, __m512 hi16) { return (__m512i)_mm512_cvtne2ps_pbh(hi16, lo16); }

__m512 bf16Low(__m512i v) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256(v)), 16));
}
__m512 bf16High(__m512i v) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(v, 1)), 16));
}

// 32 values as `parts` BF16 parts: part 0 = bf16(v), each next one bf16
// of what the parts before it miss (exact F32 differences).
void splitBf16(const Floats32& f, __m512i* out, int parts) {
  __m512 lo16 = f.lo16, hi16 = f.hi16;
  for (int i = 0; i < parts; ++i) {
    out[i] = toBf16(lo16, hi16);
    lo16 = _mm512_sub_ps(lo16, bf16Low(out[i]));
    hi16 = _mm512_sub_ps(hi16, bf16High(out[i]));
  }
}

// r[i] word j -> r[j] word i: a 16 x 16 transpose of 32-bit words.
void transpose16x32(__m512i* r) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  // r[4b + j], 128-bit lane L: rows 4b .. 4b + 3 of word 4L + j
  for (int b = 0; b < 16; b += 4) {
    r[b] = _mm512_unpacklo_epi64(t[b], t[b + 2]);
    r[b + 1] = _mm512_unpackhi_epi64(t[b], t[b + 2]);
    r[b + 2] = _mm512_unpacklo_epi64(t[b + 1], t[b + 3]);
    r[b + 3] = _mm512_unpackhi_epi64(t[b + 1], t[b + 3]);
  }
  for (int j = 0; j < 4; ++j) {
    t[j] = _mm512_shuffle_i32x4(r[j], r[4 + j], 0x88);
    t[4 + j] = _mm512_shuffle_i32x4(r[j], r[4 + j], 0xdd);
    t[8 + j] = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0x88);
    t[12 + j] = _mm512_shuffle_i32x4(r[8 + j], r[12 + j], 0xdd);
  }
  for (int j = 0; j < 4; ++j) {
    r[j] = _mm512_shuffle_i32x4(t[j], t[8 + j], 0x88);
    r[8 + j] = _mm512_shuffle_i32x4(t[j], t[8 + j], 0xdd);
    r[4 + j] = _mm512_shuffle_i32x4(t[4 + j], t[12 + j], 0x88);
    r[12 + j] = _mm512_shuffle_i32x4(t[4 + j], t[12 + j], 0xdd);
  }
}

// `rows` rows of k values of dtype t (F32, F16 or BF16; row_bytes apart
// from w) as `parts` BF16 parts of B tiles, part i at out + i * kb_count *
// 2 * kTileU16; per k block kb and half h (rows 16h .. 16h + 15) one tile.
void packPanel(const void* w, DType t, size_t row_bytes, int64_t k, int rows, int64_t kb_count, int parts,
               uint16_t* out) {
  for (int64_t kb = 0; kb < kb_count; ++kb) {
    const int valid = static_cast<int>(minOf(32, k - kb * 32));
    for (int h = 0; h < 2; ++h) {
      __m512i part[kAmxWParts][16];
      for (int c = 0; c < kTileRows; ++c) {
        const int row = h * kTileRows + c;
        if (row >= rows) {
          for (int i = 0; i < parts; ++i) part[i][c] = _mm512_setzero_si512();
          continue;
        }
        const char* src = static_cast<const char*>(w) + row * row_bytes + kb * 32 * dtypeSize(t);
        if (t == DType::kBF16) {
          part[0][c] = _mm512_maskz_loadu_epi16(firstLanes(valid), src);
        } else {
          __m512i split[kAmxWParts];
          splitBf16(loadFloats(src, t, valid), split, parts);
          for (int i = 0; i < parts; ++i) part[i][c] = split[i];
        }
      }
      for (int i = 0; i < parts; ++i) {
        uint16_t* tile = out + i * kb_count * 2 * kTileU16 + (kb * 2 + h) * kTileU16;
        transpose16x32(part[i]);
        for (int p = 0; p < kTileRows; ++p) _mm512_storeu_si512(tile + p * 32, part[i][p]);
      }
    }
  }
}

// accumulator t (0..3; the intrinsic names its tile as a literal)
void storeAccumulator(int t, float* p, int64_t stride) {
  switch (t) {
    case 0: _tile_stored(0, p, stride); break;
    case 1: _tile_stored(1, p, stride); break;
    case 2: _tile_stored(2, p, stride); break;
    default: _tile_stored(3, p, stride); break;
  }
}

// accumulator t of a 32 x 32 block into y: straight from the tile where it
// is whole, else through a scratch tile.
void storeTile(int t, const MatmulArgs& a, int64_t row0, int64_t col0, int64_t col_end, float* scratch) {
  if (row0 >= a.m) return;
  if (row0 + kTileRows <= a.m && col0 + kTileRows <= col_end) {
    storeAccumulator(t, a.y + row0 * a.n + col0, a.n * static_cast<int64_t>(sizeof(float)));
    return;
  }
  storeAccumulator(t, scratch, kTileRows * sizeof(float));
  const int64_t cols = minOf(kTileRows, col_end - col0);
  if (cols <= 0) return;
  const __mmask16 mask = static_cast<__mmask16>((1u << cols) - 1);
  for (int64_t r = 0; r < kTileRows && row0 + r < a.m; ++r) {
    _mm512_mask_storeu_ps(a.y + (row0 + r) * a.n + col0, mask, _mm512_loadu_ps(scratch + r * kTileRows));
  }
}

// y rows [m0, m0 + 32) x columns [n0, n0 + 32) (those that exist) += bias.
void addBias(const MatmulArgs& a, int64_t m0, int64_t n0, int64_t n_end) {
  const int64_t cols = minOf(kPanel, n_end - n0);
  const __mmask16 m_lo = static_cast<__mmask16>(cols >= 16 ? 0xffff : (1u << cols) - 1);
  const __mmask16 m_hi = static_cast<__mmask16>(cols >= 32 ? 0xffff : cols <= 16 ? 0 : (1u << (cols - 16)) - 1);
  const __m512 b_lo = _mm512_maskz_loadu_ps(m_lo, a.bias + n0);
  const __m512 b_hi = _mm512_maskz_loadu_ps(m_hi, a.bias + n0 + 16);
  for (int64_t r = m0; r < minOf(m0 + 2 * kTileRows, a.m); ++r) {
    float* yr = a.y + r * a.n + n0;
    _mm512_mask_storeu_ps(yr, m_lo, _mm512_add_ps(_mm512_maskz_loadu_ps(m_lo, yr), b_lo));
    _mm512_mask_storeu_ps(yr + 16, m_hi, _mm512_add_ps(_mm512_maskz_loadu_ps(m_hi, yr + 16), b_hi));
  }
}

// the A tiles of x part `part` (rows 16..31 `next` further) into tmm4-5,
// the B tiles at w into tmm6-7, then tmm0-3 += their products.
#define TANDEM_AMX_LOAD_X(part)                                \
  _tile_loadd(4, x + (part) * part_stride + kb * kTileU16, 64); \
  _tile_loadd(5, x + (part) * part_stride + next + kb * kTileU16, 64)
#define TANDEM_AMX_LOAD_W(w)          \
  _tile_loadd(6, (w), 64);            \
  _tile_loadd(7, (w) + kTileU16, 64)
#define TANDEM_AMX_PRODUCTS()  \
  _tile_dpbf16ps(0, 4, 6);     \
  _tile_dpbf16ps(1, 4, 7);     \
  _tile_dpbf16ps(2, 5, 6);     \
  _tile_dpbf16ps(3, 5, 7)

// tmm0-3 += the 32 x 32 block's products over k blocks [0, kb_count): x's
// three parts (A tiles from x, part_stride apart, `next` to rows 16..31)
// times w's `parts` parts of B tiles (from w, w_stride apart), every
// product whose size is 2^-16 of x w or more: x0 w0, x1 w0, x2 w0 (and
// x0 w1, x1 w1 with two parts of w; and x0 w2 with three).
inline __attribute__((always_inline)) void accumulate(const uint16_t* x, int64_t part_stride, int64_t next,
                                                      const uint16_t* w, int64_t w_stride, int64_t kb_count,
                                                      int parts) {
  for (int64_t kb = 0; kb < kb_count; ++kb) {
    const uint16_t* w0 = w + kb * 2 * kTileU16;
    TANDEM_AMX_LOAD_X(0);
    TANDEM_AMX_LOAD_W(w0);
    TANDEM_AMX_PRODUCTS();
    if (parts >= 2) {
      TANDEM_AMX_LOAD_W(w0 + w_stride);
      TANDEM_AMX_PRODUCTS();
      if (parts == 3) {
        TANDEM_AMX_LOAD_W(w0 + 2 * w_stride);
        TANDEM_AMX_PRODUCTS();
        TANDEM_AMX_LOAD_W(w0 + w_stride);
      }
      TANDEM_AMX_LOAD_X(1);
      TANDEM_AMX_PRODUCTS();
      TANDEM_AMX_LOAD_W(w0);
    } else {
      TANDEM_AMX_LOAD_X(1);
    }
    TANDEM_AMX_PRODUCTS();
    TANDEM_AMX_LOAD_X(2);
    TANDEM_AMX_PRODUCTS();
  }
}
#undef TANDEM_AMX_LOAD_X
#undef TANDEM_AMX_LOAD_W
#undef TANDEM_AMX_PRODUCTS

}  // namespace

void amxSplitRows(const float* x, int64_t m, int64_t k, int64_t kp, int64_t begin, int64_t end, uint16_t* parts,
                  int64_t part_stride) {
  const int64_t kb_count = kp / 32;
  for (int64_t r = begin; r < end; ++r) {
    for (int64_t kb = 0; kb < kb_count; ++kb) {
      __m512i v[kAmxXParts];
      for (__m512i& p : v) p = _mm512_setzero_si512();
      if (r < m && kb * 32 < k) {
        splitBf16(loadFloats(x + r * k + kb * 32, DType::kF32, static_cast<int>(minOf(32, k - kb * 32))), v,
                  kAmxXParts);
      }
      const int64_t at = amxTileOffset(r, kb, kb_count);
      for (int i = 0; i < kAmxXParts; ++i) _mm512_storeu_si512(parts + i * part_stride + at, v[i]);
    }
  }
}

void amxPanels(const MatmulArgs& a, const uint16_t* x_parts, int64_t part_stride, int64_t kp, int64_t n_begin,
               int64_t n_end) {
  const int64_t kb_count = kp / 32;
  const bool dense = a.w_dtype == DType::kF32 || a.w_dtype == DType::kF16 || a.w_dtype == DType::kBF16;
  const int parts = a.w_dtype == DType::kBF16 ? 1 : a.w_dtype == DType::kF32 ? 3 : 2;
  const int64_t part_u16 = kb_count * 2 * kTileU16;
  const int64_t panel_u16 = part_u16 * parts;
  const int64_t panels = (n_end - n_begin + kPanel - 1) / kPanel;
  // the task's w rows packed once, then reused by every block of x rows
  // (each 32 x rows sweep them from L2); counted in floats, two bf16 each
  auto* packed = reinterpret_cast<uint16_t*>(alignedScratch(0, static_cast<size_t>(panels * panel_u16 / 2)));
  float* scratch = alignedScratch(1, kTileRows * kTileRows);
  // a quantized w's panel is dequantized to F32 rows first (in L2), then
  // packed as an F32 one
  float* dequantized = dense ? nullptr : alignedScratch(2, static_cast<size_t>(kPanel * a.k));
  for (int64_t p = 0; p < panels; ++p) {
    const int64_t n0 = n_begin + p * kPanel;
    const int rows = static_cast<int>(minOf(kPanel, n_end - n0));
    uint16_t* out = packed + p * panel_u16;
    if (dense) {
      const size_t row_bytes = dtypeSize(a.w_dtype) * static_cast<size_t>(a.k);
      packPanel(static_cast<const char*>(a.w) + n0 * row_bytes, a.w_dtype, row_bytes, a.k, rows, kb_count, parts,
                out);
    } else {
      amxDequantizeRows(a, n0, rows, dequantized);
      packPanel(dequantized, DType::kF32, static_cast<size_t>(a.k) * sizeof(float), a.k, rows, kb_count, parts, out);
    }
  }
  configureTiles();
  const int64_t mp = (a.m + 2 * kTileRows - 1) / (2 * kTileRows) * (2 * kTileRows);
  for (int64_t m0 = 0; m0 < mp; m0 += 2 * kTileRows) {
    // the two A tiles of a k block: 16 rows of x each, 1 KB apart
    const uint16_t* x = x_parts + amxTileOffset(m0, 0, kb_count);
    const int64_t next = amxTileOffset(m0 + kTileRows, 0, kb_count) - amxTileOffset(m0, 0, kb_count);
    for (int64_t p = 0; p < panels; ++p) {
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      accumulate(x, part_stride, next, packed + p * panel_u16, part_u16, kb_count, parts);
      const int64_t n0 = n_begin + p * kPanel;
      storeTile(0, a, m0, n0, n_end, scratch);
      storeTile(1, a, m0, n0 + kTileRows, n_end, scratch);
      storeTile(2, a, m0 + kTileRows, n0, n_end, scratch);
      storeTile(3, a, m0 + kTileRows, n0 + kTileRows, n_end, scratch);
      if (a.bias != nullptr) addBias(a, m0, n0, n_end);
    }
  }
  _tile_release();
}

bool amxKernelBuilt() { return true; }

}  // namespace tandem::kernels::cpu

#else  // a compiler or target without AMX: amxBf16Usable() is never asked to pick this

namespace tandem::kernels::cpu {
void amxSplitRows(const float*, int64_t, int64_t, int64_t, int64_t, int64_t, uint16_t*, int64_t) {}
void amxPanels(const MatmulArgs&, const uint16_t*, int64_t, int64_t, int64_t, int64_t) {}
bool amxKernelBuilt() { return false; }
}  // namespace tandem::kernels::cpu

#endif
