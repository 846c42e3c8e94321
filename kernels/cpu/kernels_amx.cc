// The AMX-BF16 prefill matmul. The only file compiled with -mamx-tile
// -mamx-bf16 (kernels/CMakeLists.txt); called only after amxBf16Usable()
// said yes (amx_detect.cc), so no other code path runs tile instructions.
//
// Per task: x is rounded to BF16 once (rows padded to 32 with zeros, k to
// 32), then each panel of 32 w rows is converted to BF16 once and packed in
// the VNNI pair layout the B tile wants; a 32 x 32 block of y is four F32
// accumulator tiles (tmm0-3) fed by two A tiles of x (tmm4-5) and two B
// tiles of w (tmm6-7), 32 k per tdpbf16ps.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "common/dtype.h"
#include "kernels/cpu/amx_matmul.h"

#if defined(__x86_64__) && defined(__AMX_TILE__) && defined(__AMX_BF16__)
#include <immintrin.h>

namespace tandem::kernels::cpu {

namespace {

constexpr int kTileRows = 16;  // rows of every tile
constexpr int kTileK = 32;     // bf16 values in a 64-byte tile row
constexpr int kPanel = 32;     // w rows per packed panel (two B tiles)

struct alignas(64) TileConfig {
  uint8_t palette_id = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

void configureTiles() {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = kTileRows;
  }
  _tile_loadconfig(&cfg);
}

float wAt(const MatmulArgs& a, int64_t i) {
  switch (a.w_dtype) {
    case DType::kF32: return static_cast<const float*>(a.w)[i];
    case DType::kF16: return f16ToF32(static_cast<const uint16_t*>(a.w)[i]);
    default: return bf16ToF32(static_cast<const uint16_t*>(a.w)[i]);
  }
}

// rows [n0, n0 + rows) of w as BF16 in the B tile layout: per k block kb
// and half h (w rows 16h..16h+15), 16 tile rows of 16 (k, k+1) pairs.
void packPanel(const MatmulArgs& a, int64_t n0, int rows, int64_t kp, uint16_t* out) {
  std::memset(out, 0, static_cast<size_t>(kp) * kPanel * sizeof(uint16_t));
  for (int c = 0; c < rows; ++c) {
    const int64_t base = (n0 + c) * a.k;
    const int h = c / kTileRows, col = c % kTileRows;
    for (int64_t k = 0; k < a.k; ++k) {
      const int64_t kb = k / kTileK, pair = (k % kTileK) / 2;
      uint16_t* tile = out + (kb * 2 + h) * (kTileRows * kTileK);
      const uint16_t v = a.w_dtype == DType::kBF16 ? static_cast<const uint16_t*>(a.w)[base + k]
                                                   : f32ToBf16(wAt(a, base + k));
      tile[pair * kTileK + col * 2 + (k & 1)] = v;
    }
  }
}

}  // namespace

void amxMatmul(const MatmulArgs& a, int64_t n_begin, int64_t n_end) {
  const int64_t kp = (a.k + kTileK - 1) / kTileK * kTileK;
  const int64_t mp = (a.m + 2 * kTileRows - 1) / (2 * kTileRows) * (2 * kTileRows);
  // scratch is counted in floats: two bf16 values each
  auto* xb = reinterpret_cast<uint16_t*>(threadScratch(1, static_cast<size_t>(mp * kp / 2)));
  auto* wp = reinterpret_cast<uint16_t*>(threadScratch(0, static_cast<size_t>(kp * kPanel / 2)));
  float* c = threadScratch(2, kTileRows * kTileRows);
  for (int64_t i = 0; i < mp; ++i) {
    uint16_t* dst = xb + i * kp;
    int64_t k = 0;
    if (i < a.m) {
      for (; k < a.k; ++k) dst[k] = f32ToBf16(a.x[i * a.k + k]);
    }
    std::fill(dst + k, dst + kp, uint16_t{0});
  }
  configureTiles();
  const int64_t x_stride = kp * sizeof(uint16_t);
  for (int64_t n0 = n_begin; n0 < n_end; n0 += kPanel) {
    const int cols = static_cast<int>(std::min<int64_t>(kPanel, n_end - n0));
    packPanel(a, n0, cols, kp, wp);
    for (int64_t m0 = 0; m0 < mp; m0 += 2 * kTileRows) {
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      for (int64_t kb = 0; kb < kp / kTileK; ++kb) {
        _tile_loadd(4, xb + m0 * kp + kb * kTileK, x_stride);
        _tile_loadd(5, xb + (m0 + kTileRows) * kp + kb * kTileK, x_stride);
        _tile_loadd(6, wp + (kb * 2) * (kTileRows * kTileK), 64);
        _tile_loadd(7, wp + (kb * 2 + 1) * (kTileRows * kTileK), 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
      }
      // each accumulator through a 16 x 16 scratch into y, plus bias
      for (int t = 0; t < 4; ++t) {
        switch (t) {
          case 0: _tile_stored(0, c, 64); break;
          case 1: _tile_stored(1, c, 64); break;
          case 2: _tile_stored(2, c, 64); break;
          default: _tile_stored(3, c, 64); break;
        }
        const int64_t row0 = m0 + (t / 2) * kTileRows;
        const int col0 = (t % 2) * kTileRows;
        for (int r = 0; r < kTileRows && row0 + r < a.m; ++r) {
          for (int j = 0; j < kTileRows && col0 + j < cols; ++j) {
            const int64_t n = n0 + col0 + j;
            a.y[(row0 + r) * a.n + n] = c[r * kTileRows + j] + (a.bias != nullptr ? a.bias[n] : 0.0f);
          }
        }
      }
    }
  }
  _tile_release();
}

bool amxKernelBuilt() { return true; }

}  // namespace tandem::kernels::cpu

#else  // a compiler or target without AMX: amxBf16Usable() is never asked to pick this

namespace tandem::kernels::cpu {
void amxMatmul(const MatmulArgs&, int64_t, int64_t) {}
bool amxKernelBuilt() { return false; }
}  // namespace tandem::kernels::cpu

#endif
